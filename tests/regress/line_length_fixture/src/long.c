/* fixture: line 3 is over 120 bytes */

int too_long(int a) { return a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a; } /* [ fixture: 121+ bytes */
int fine(void);
