/* A SIGALRM handler that spins, interrupting busy. */
#include <signal.h>
#include <sys/time.h>
#include "common.h"

__attribute__((noipa)) void handler_spin(void)
{
	double until = cpu() + 0.003;
	while (cpu() < until)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

__attribute__((noipa)) void on_alarm(int sig)
{
	(void)sig;
	handler_spin();
	sink++; /* not a tail call */
}

__attribute__((noipa)) unsigned long busy(double until)
{
	unsigned long x = 0;
	while (cpu() < until)
		for (int i = 0; i < 20000; i++)
			x += i * sink;
	return x;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = {{0, 10000}, {0, 10000}};
	setitimer(ITIMER_REAL, &it, 0);
	sink = busy(cpu() + seconds(argc, argv, 0.3));
	return 0;
}
