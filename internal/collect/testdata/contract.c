/* contract.c: prints the size of the control page's words as the collector library reads them
 * (collector.h's er_ctl), for TestContractControl (contract_test.go). The rest of the control
 * protocol is generated from internal/tracedef (preload/c/control.h, controllayout.go).
 *
 *   const ER_STATE_WORD SIZE */
#define _GNU_SOURCE
#include <stdio.h>

#include "../../../preload/c/collector.h"

int main(void)
{
	printf("const ER_STATE_WORD %zu\n", sizeof *er_ctl);
	return 0;
}
