package perfdata

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"er/internal/perfabi"
)

// TestOrdered: records come out in time order, each round's held back until the round after the next.
func TestOrdered(t *testing.T) {
	st := perfabi.SampleTID | perfabi.SampleTime
	s := newStream()
	s.attr(TypeSoftware, 0, st, 0, FlagSampleIDAll, 0, 0, 0)
	sample := func(tm uint64) { s.record(perfabi.RecordSample, 0, 1|1<<32, tm) }
	// Round 1: two CPUs' rings, one after the other.
	sample(10)
	sample(30)
	sample(20)
	s.record(RecordFinishedRound, 0)
	// Round 2: a record older than round 1's newest (the second ring was read late).
	sample(25)
	sample(50)
	s.record(RecordFinishedRound, 0)
	sample(40)
	sample(60)
	// A COMM without a time (synthesized before recording): passed on at once.
	s.record(perfabi.RecordComm, 0, 1|1<<32, 0x41, 1|1<<32, 0)
	_, rd := s.reader(t)
	var got []string
	err := Ordered(rd, func(r perfabi.Record) error {
		switch r := r.(type) {
		case *perfabi.Sample:
			got = append(got, fmt.Sprint(r.Time))
		case *FinishedRound:
			got = append(got, "|")
		case *perfabi.Comm:
			got = append(got, "comm "+r.Comm)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// At the first round nothing is old enough (the limit is 0); at the second, up to round 1's
	// newest (30); at the end, the rest.
	if w := "| 10 20 25 30 | comm A 40 50 60"; strings.Join(got, " ") != w {
		t.Errorf("order %q, want %q", strings.Join(got, " "), w)
	}
	// fn's error stops the reading.
	_, rd = s.reader(t)
	stop := errors.New("stop")
	n := 0
	if err := Ordered(rd, func(perfabi.Record) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Ordered returned %v after %d calls", err, n)
	}
	// A damaged record is the error.
	d := &stream{b: append(bytes.Clone(s.b), 9, 0, 0, 0, 0, 0, 4, 0)}
	_, rd = d.reader(t)
	if err := Ordered(rd, func(perfabi.Record) error { return nil }); err == nil || !strings.Contains(err.Error(), "record of type 9 says it has 4 bytes") {
		t.Errorf("Ordered on a damaged stream: %v", err)
	}
	// A stream cut inside a record: every record before it, then the end.
	count := func() (int, error) {
		_, rd = s.reader(t)
		n := 0
		err := Ordered(rd, func(perfabi.Record) error { n++; return nil })
		return n, err
	}
	whole, _ := count()
	s.b = append(s.b, 9, 0, 0)
	if n, err := count(); err != nil || n != whole || rd.Cut() == nil {
		t.Errorf("Ordered on a cut stream: %v after %d records (want %d), cut %+v", err, n, whole, rd.Cut())
	}
}
