/* STUB: replaced by the module's owner. */
#include <stdio.h>
#include "cmd.h"
int cmd_run(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "proffs run: not built yet\n");
	return 1;
}
