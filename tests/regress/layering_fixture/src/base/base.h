/* fixture: base */
