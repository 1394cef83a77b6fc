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

// TestRelocate moves each library instance's files into the experiment of its image, by pid and
// start time, and drops the data of images that are not followed.
func TestRelocate(t *testing.T) {
	s := testSession(t, DefaultSpec())
	dir := s.dir
	child := s.newImage(11, 10, s.founder, 'f', 500, "prog")
	s.spec.Follow = "off"
	unfollowed := s.newImage(12, 10, s.founder, 'f', 600, "prog")
	if unfollowed.open() {
		t.Fatal("-F off: the image is followed")
	}
	write := func(name string) {
		p := filepath.Join(dir, procDirName, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"tracestacks", "heaptrace", "info"} {
			if err := os.WriteFile(filepath.Join(p, f), []byte(name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("10.1100") // the founder, started 100 ns after er
	write("11.1700") // the child, 200 ns after its fork at 500
	write("12.1800")
	s.relocateLibraryData()
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "heaptrace"), "10.1100"},
		{filepath.Join(child.w.Dir(), "tracestacks"), "11.1700"},
	} {
		if b, err := os.ReadFile(tc.file); err != nil || string(b) != tc.want {
			t.Errorf("%s: %q, %v; want the data of %s", tc.file, b, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, procDirName)); !os.IsNotExist(err) {
		t.Errorf(".proc is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "_f2.er")); !os.IsNotExist(err) {
		t.Errorf("an unfollowed process has a subexperiment: %v", err)
	}
}
