/* fixture: private to runtime/src/vision/ */
