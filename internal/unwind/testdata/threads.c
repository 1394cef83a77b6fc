/* Four threads spinning in worker -> work -> spin. */
#include <pthread.h>
#include "common.h"

__attribute__((noipa)) unsigned long spin(double until)
{
	unsigned long x = 0;
	while (cpu() < until)
		for (int i = 0; i < 200000; i++)
			x += i * sink;
	return x;
}

__attribute__((noipa)) unsigned long work(double until) { return spin(until) + 1; }

__attribute__((noipa)) void *worker(void *arg)
{
	sink += work(cpu() + *(double *)arg);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = seconds(argc, argv, 0.3);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], 0, worker, &secs) != 0)
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], 0);
	return 0;
}
