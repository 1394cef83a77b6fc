package experiment

import (
	"bytes"
	"testing"
)

func TestExitText(t *testing.T) {
	for _, c := range []struct {
		log  Log
		want string
	}{
		{Log{Exited: true, EndTime: 5, ExitStatus: 3}, "exited with status 3"},
		{Log{Exited: true, EndTime: 5}, "exited with status 0"},
		{Log{Exited: true, EndTime: 5, ExitStatus: 134, ExitSignal: 6}, "terminated by signal 6 (SIGABRT)"},
		{Log{Exited: true, EndTime: 5, ExitStatus: 130, ExitSignal: 2}, "terminated by signal 2 (SIGINT)"},
		{Log{Exited: true, EndTime: 5, ExitStatus: 134}, "exited with status 134 (128+6: how a shell reports a command that signal 6 (SIGABRT) killed)"},
		{Log{Exited: true, EndTime: 5, ExitStatus: 200}, "exited with status 200"},
		{Log{}, "exit not recorded"},
		{Log{Attached: true, EndTime: 5}, "detached at the end of recording; the process ran on"},
		{Log{Attached: true, Exited: true, EndTime: 5}, "exited; its exit status is not known (er collect -P attached to it: its parent collects the status)"},
		{Log{Lineage: "_f1", Exited: true, EndTime: 5}, "exited; its exit status is not known (a descendant: its parent collects the status)"},
		{Log{Lineage: "_f1", EndTime: 5, Events: []Event{{Kind: "exit", Text: "exec started a new image"}}}, "replaced by exec: the process ran on as another program"},
		{Log{Lineage: "_f1", EndTime: 5}, "still running when recording ended"},
	} {
		if got := c.log.ExitText(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.log, got, c.want)
		}
	}
}

func TestSignalName(t *testing.T) {
	if got := SignalName(9); got != "SIGKILL" {
		t.Errorf("SignalName(9) = %q", got)
	}
	if got := SignalName(99); got != "signal 99" {
		t.Errorf("SignalName(99) = %q", got)
	}
}

// TestRecordedDuration: -t or -L stopped recording at StopTime; log.xml keeps it (end@stopped).
func TestRecordedDuration(t *testing.T) {
	for _, c := range []struct {
		log  Log
		want int64
	}{
		{Log{EndTime: 2e9}, 2e9},
		{Log{EndTime: 2e9, StopTime: 5e8}, 5e8},
		{Log{StopTime: 5e8}, 5e8}, // still running after the stop
		{Log{}, 0},
	} {
		if got := c.log.RecordedDuration(); got != c.want {
			t.Errorf("%+v: %d, want %d", c.log, got, c.want)
		}
	}
	l, _, err := decodeLog("log.xml", encodeLog(Log{EndTime: 2e9, StopTime: 5e8, Exited: true}))
	if err != nil || l.StopTime != 5e8 || l.EndTime != 2e9 {
		t.Errorf("log.xml round trip: stop %d end %d, %v", l.StopTime, l.EndTime, err)
	}
	if b := encodeLog(Log{EndTime: 2e9}); bytes.Contains(b, []byte("stopped")) {
		t.Errorf("end@stopped written where recording was not stopped:\n%s", b)
	}
}
