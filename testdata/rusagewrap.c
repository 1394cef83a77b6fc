/* rusagewrap.c: runs a command (fork, exec, wait) and prints the CPU time of all its descendants
 * that were waited for, from getrusage(RUSAGE_CHILDREN), and its own:
 *   "children-cpu SECONDS" and "self-cpu SECONDS". Exits with the command's status. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double cpu(int who) {
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: rusagewrap command [args...]\n");
		return 2;
	}
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status = 0;
	waitpid(p, &status, 0);
	fprintf(stderr, "children-cpu %.6f\nself-cpu %.6f\n", cpu(RUSAGE_CHILDREN), cpu(RUSAGE_SELF));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
