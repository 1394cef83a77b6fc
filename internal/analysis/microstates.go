package analysis

import (
	"strings"

	"er/internal/experiment"
)

// Microstates: the clock events of an experiment that recorded them include its threads' off-CPU
// intervals (experiment.Mode), which fill MicrostateMetrics. The collector knows whether a thread
// was preempted, blocked in a system call or in a page fault; whether a blocked thread waited on a
// user-level lock is told here by its stack: a futex wait, or a wait in the POSIX thread library's
// lock, condition variable, semaphore and barrier functions, is User Lock Time, except when
// pthread_join waits (glibc's pthread_join sleeps on the thread's futex too), which is Other Wait.

// microstatesRecorded says whether experiment d recorded microstates.
func microstatesRecorded(d *experiment.Data) bool {
	v, ok := d.Log.Setting(experiment.SettingMicrostates)
	return ok && experiment.On(v)
}

// rawLockWait reports whether raw stack r of p waits on a user-level lock: by its functions before
// the view mode's passes where they ran, else by its function stack.
func (p *Profile) rawLockWait(r int32) bool {
	if l := p.raw[r].lock; l != 0 {
		return l == 2
	}
	return p.lockWait(p.raw[r].stack)
}

// lockWait reports whether function stack s of p waits on a user-level lock, remembering the answer.
func (p *Profile) lockWait(s int32) bool {
	if p.lockStacks == nil {
		p.lockStacks = map[int32]bool{}
	}
	if v, ok := p.lockStacks[s]; ok {
		return v
	}
	lock := lockFrames(p, p.frames[p.stackStart[s]:p.stackStart[s+1]])
	p.lockStacks[s] = lock
	return lock
}

// lockFrames reports whether the functions fr of p (a stack, root first) wait on a user-level lock.
func lockFrames(p *Profile, fr []int32) bool {
	lock := false
	for _, f := range fr {
		if int(f) >= len(p.Functions) {
			continue
		}
		switch lockFunction(p.Functions[f].Name) {
		case lockNo:
			return false
		case lockYes:
			lock = true
		}
	}
	return lock
}

// How a function on a blocked thread's stack classifies its wait.
const (
	lockMaybe = iota // says nothing
	lockYes          // a user-level lock wait
	lockNo           // not a lock wait, whatever the rest of the stack says
)

// lockFunction classifies function name (raw).
func lockFunction(name string) int {
	n := strings.TrimLeft(name, "_")
	switch {
	case strings.HasPrefix(n, "pthread_join"), strings.HasPrefix(n, "pthread_clockjoin"),
		strings.HasPrefix(n, "pthread_timedjoin"), strings.HasPrefix(n, "pthread_tryjoin"):
		return lockNo
	case strings.Contains(n, "futex"), strings.HasPrefix(n, "lll_lock"),
		strings.HasPrefix(n, "pthread_mutex_"), strings.HasPrefix(n, "pthread_cond_"),
		strings.HasPrefix(n, "pthread_rwlock_"), strings.HasPrefix(n, "pthread_barrier_"),
		strings.HasPrefix(n, "new_sem_wait"), strings.HasPrefix(n, "sem_wait"), strings.HasPrefix(n, "sem_timedwait"),
		strings.HasPrefix(n, "sem_clockwait"), strings.HasPrefix(n, "do_futex"):
		return lockYes
	}
	return lockMaybe
}

// hasMicrostates says whether p has the microstate metrics (after the clock's, which come first).
func (p *Profile) hasMicrostates() bool {
	return len(p.Metrics) > MetricWall && p.Metrics[MetricWaitCPU].Name == MicrostateMetrics[0].Name &&
		p.base[p.Metrics[MetricWaitCPU].Data] == 0
}
