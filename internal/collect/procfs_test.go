package collect

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"er/internal/experiment"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 1234 /usr/bin/prog
55d0c0a01000-55d0c0a02000 r-xp 00001000 fe:01 1234 /usr/bin/prog
7f0000000000-7f0000020000 r-xp 00026000 fe:01 99 /lib/x86_64-linux-gnu/libc.so.6
7f0000100000-7f0000101000 rwxp 00000000 00:00 0
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]
7ffc10000000-7ffc10001000 r-xp 00000000 fe:01 5 /tmp/name with spaces
`
	got, err := parseMaps(7, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []experiment.Mapping{
		{Pid: 7, Start: 0x55d0c0a01000, End: 0x55d0c0a02000, Offset: 0x1000, Path: "/usr/bin/prog", UnloadTime: -1},
		{Pid: 7, Start: 0x7f0000000000, End: 0x7f0000020000, Offset: 0x26000, Path: "/lib/x86_64-linux-gnu/libc.so.6", UnloadTime: -1},
		{Pid: 7, Start: 0x7f0000100000, End: 0x7f0000101000, Path: "[anon]", UnloadTime: -1},
		{Pid: 7, Start: 0x7ffc00000000, End: 0x7ffc00002000, Path: "[vdso]", UnloadTime: -1},
		{Pid: 7, Start: 0x7ffc10000000, End: 0x7ffc10001000, Path: "/tmp/name with spaces", UnloadTime: -1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseMaps (-want +got):\n%s", d)
	}
	for _, bad := range []string{"zz-10 r-xp 0 0 0\n", "10 r-xp 0 0 0\n", "10-20 r-xp\n", "20-10 r-xp 0 0 0 /x\n"} {
		if _, err := parseMaps(1, []byte(bad)); err == nil {
			t.Errorf("parseMaps(%q): no error", bad)
		}
	}
}

func TestReadMapsSelf(t *testing.T) {
	maps, err := readMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	found := false
	for _, m := range maps {
		if m.Path == exe {
			found = true
		}
	}
	if !found {
		t.Errorf("no executable mapping of %s in %d mappings", exe, len(maps))
	}
}

func TestParseUsage(t *testing.T) {
	stat := "1234 (a (weird) name) R 1 1234 1234 0 -1 4194304 150 0 3 0 250 75 40 2 20 0 4 0 100 12345678 300 18446744073709551615"
	status := "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t34\n"
	u, err := parseUsage([]byte(stat), []byte(status), 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := procUsage{userNS: 2_500_000_000, systemNS: 750_000_000, childrenNS: 420_000_000, minFlt: 150, majFlt: 3, volCS: 12, involCS: 34, rssBytes: 300 * 4096, threads: 4}
	if u != want {
		t.Errorf("parseUsage = %+v, want %+v", u, want)
	}
	if _, err := parseUsage([]byte("1 (x) R 1 2"), nil, 4096); err == nil {
		t.Error("short stat: no error")
	}
	if _, err := readUsage(os.Getpid()); err != nil {
		t.Errorf("readUsage(self): %v", err)
	}
}
