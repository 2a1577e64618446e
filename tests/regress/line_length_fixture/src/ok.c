/* fixture: every line fits; semicolons; [brackets] stay harmless */
int ok(void) { return 0; }
