/* fixture: private to src/heap/ */
