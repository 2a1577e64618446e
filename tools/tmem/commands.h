/* Subcommands of the tmem command line. Each lives in its own file
 * (cmd_<name>.c) and returns a process exit code. */
#ifndef TMEM_TOOL_COMMANDS_H
#define TMEM_TOOL_COMMANDS_H

typedef int (*tmem_cmd_fn)(int argc, char **argv);

typedef struct tmem_cmd {
    const char *name;
    const char *usage;  /* one line */
    tmem_cmd_fn run;
} tmem_cmd;

/* Declared here, defined in cmd_<name>.c; registered in main.c. */
/* (add one declaration per cmd_<name>.c here) */
int tmem_cmd_bench(int argc, char **argv);
int tmem_cmd_info(int argc, char **argv);
int tmem_cmd_stats(int argc, char **argv);
int tmem_cmd_demo(int argc, char **argv);
int tmem_cmd_plan(int argc, char **argv);
int tmem_cmd_fit(int argc, char **argv);
int tmem_cmd_report(int argc, char **argv);
int tmem_cmd_watch(int argc, char **argv);
int tmem_cmd_run(int argc, char **argv);
int tmem_cmd_convert(int argc, char **argv);
int tmem_cmd_gen(int argc, char **argv);
int tmem_cmd_serve(int argc, char **argv);

#endif
