/* whoami: prints the credentials it runs with, whether the loader ran it securely (a set-user-ID,
 * set-group-ID or file-capabilities program), and whether LD_PRELOAD reached it.
 * Build: gcc -O1 -g -o whoami whoami.c */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void)
{
	const char *pre = getenv("LD_PRELOAD");
	printf("euid=%d egid=%d secure=%lu preload=%s\n", (int)geteuid(), (int)getegid(),
	       getauxval(AT_SECURE), pre ? "yes" : "no");
	return 0;
}
