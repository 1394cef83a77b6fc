/* contract.c: prints what the collector library's header says of its control protocol (the
 * state page er writes, the messages it reads), for TestContractControl (contract_test.go), which
 * compares it with internal/collect. One line each:
 *
 *   struct NAME SIZE
 *   field STRUCT.FIELD OFFSET SIZE
 *   const NAME VALUE        (decimal)
 *
 * The state page's words are indices of 32-bit words (ER_STATE_WORD, their size in bytes). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>

#include "../../../preload/c/collector.h"

#define STRUCT(s) printf("struct %s %zu\n", #s, sizeof(struct s))
#define FIELD(s, f) printf("field %s.%s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define CONST(c) printf("const %s %llu\n", #c, (unsigned long long)(c))

int main(void)
{
	CONST(ER_STATE_MAGIC);
	printf("const ER_STATE_WORD %zu\n", sizeof *er_ctl);
	CONST(ER_STATE_STOP);
	CONST(ER_STATE_PAUSE_ALL);
	CONST(ER_STATE_STOP_LIMIT);
	CONST(ER_STATE_STOP_ENDED);

	CONST(ER_MSG_MAGIC);
	CONST(ER_MSG_SAMPLE);
	CONST(ER_MSG_PAUSED);
	CONST(ER_MSG_RESUMED);
	CONST(ER_MSG_STARTED);
	CONST(ER_MSG_FORKED);
	CONST(ER_MSG_EXECED);
	CONST(ER_MSG_STOPPED);
	CONST(ER_MSG_NOSTART);
	CONST(ER_MSG_UNREACHABLE);
	CONST(ER_MSG_SETUID);
	CONST(ER_MSG_HANDLER);
	CONST(ER_MSG_SECCOMP);
	CONST(ER_MSG_SECCOMP_ALLOWED);
	CONST(ER_MSG_SECCOMP_REFUSED);
	CONST(ER_MSG_SECCOMP_STRICT);
	CONST(ER_MSG_NOFILE);
	CONST(ER_MSG_LANDLOCK);
	CONST(ER_RELAY_COOKIE);

	STRUCT(er_msg);
	FIELD(er_msg, magic);
	FIELD(er_msg, kind);
	FIELD(er_msg, pid);
	FIELD(er_msg, tid);
	FIELD(er_msg, time);
	FIELD(er_msg, arg);
	FIELD(er_msg, aux);
	return 0;
}
