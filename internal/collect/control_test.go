package collect

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestControlChannel(t *testing.T) {
	dir := t.TempDir()
	c, err := openControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(filepath.Join(dir, procDirName, stateName))
	if err != nil || len(state) != 4096 || binary.LittleEndian.Uint32(state) != stateMagic {
		t.Fatalf("state page: %d bytes, %v", len(state), err)
	}
	c.set(statePause, 1)
	state, _ = os.ReadFile(filepath.Join(dir, procDirName, stateName))
	if binary.LittleEndian.Uint32(state[statePause:]) != 1 {
		t.Error("set(statePause, 1) is not seen in the file")
	}
	// A library instance's message.
	f, err := os.OpenFile(filepath.Join(dir, controlName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, messageSize)
	binary.LittleEndian.PutUint32(msg, messageMagic)
	binary.LittleEndian.PutUint32(msg[4:], msgPaused)
	binary.LittleEndian.PutUint32(msg[8:], 42)
	binary.LittleEndian.PutUint32(msg[12:], 43)
	binary.LittleEndian.PutUint64(msg[16:], 123456789)
	binary.LittleEndian.PutUint32(msg[24:], 10)
	bad := append([]byte{}, msg...)
	bad[0] = 'X' // not a message: skipped
	if _, err := f.Write(append(bad, msg...)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []message
	for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		got = c.pending()
	}
	want := message{kind: msgPaused, pid: 42, tid: 43, time: 123456789, signo: 10}
	if len(got) != 1 || got[0] != want {
		t.Errorf("messages %+v, want [%+v]", got, want)
	}
	c.close()
}

// TestControlAll: all returns every message written before it, at once, even those the reader has not
// taken yet (100 of them written in one go), and no barrier; messages written after it come later.
func TestControlAll(t *testing.T) {
	dir := t.TempDir()
	c, err := openControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	f, err := os.OpenFile(filepath.Join(dir, controlName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var batch []byte
	for i := range 100 {
		msg := make([]byte, messageSize)
		binary.LittleEndian.PutUint32(msg, messageMagic)
		binary.LittleEndian.PutUint32(msg[4:], msgExeced)
		binary.LittleEndian.PutUint32(msg[8:], uint32(1000+i))
		batch = append(batch, msg...)
	}
	if _, err := f.Write(batch); err != nil {
		t.Fatal(err)
	}
	got := c.all()
	if len(got) != 100 || got[0].pid != 1000 || got[99].pid != 1099 {
		t.Fatalf("all: %d messages (%+v ...)", len(got), got[:min(len(got), 2)])
	}
	if _, err := f.Write(batch[:messageSize]); err != nil {
		t.Fatal(err)
	}
	if got := c.all(); len(got) != 1 || got[0].pid != 1000 || got[0].kind != msgExeced {
		t.Errorf("all after one more: %+v", got)
	}
}
