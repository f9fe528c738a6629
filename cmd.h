/* cmd.h - the subcommands main() dispatches to. Each parses its own flags
 * (getopt_long, --help prints usage and exits 0, a bad flag prints one line
 * and returns 2) and returns the process exit code. */
#ifndef PROFFS_CMD_H
#define PROFFS_CMD_H

int cmd_import(int argc, char **argv); /* store/cmd/cmd_import.c */
int cmd_check(int argc, char **argv);  /* store/cmd/cmd_check.c */
int cmd_copy(int argc, char **argv);   /* store/cmd/cmd_copy.c */
int cmd_cat(int argc, char **argv);    /* fs/tree/cmd_cat.c */
int cmd_mount(int argc, char **argv);  /* fs/fuse/cmd_mount.c */
int cmd_run(int argc, char **argv);    /* sampler/daemon.c */

#endif
