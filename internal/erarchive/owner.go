package erarchive

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"er/internal/experiment"
)

// An experiment names the files er archive copies into it (map.xml its load objects, their debug
// information the source files), and whoever wrote it may read what is copied: a user who names
// /root/secret.c, or a file of a directory only root may search, in the experiment given to root's
// er archive would read it from archives/. So er archive reads and writes as the experiment's owner
// (the owner of its founder's directory): run by that user, it archives the experiment itself; run
// by root, it runs itself again as that user (its user and group ids, and its groups), who reads
// only what they may read (the kernel checks every open, links, directories' permissions and ACLs
// included) and owns what is written; run by another user, it refuses.
//
// Running again as the owner, rather than checking the files' modes or switching the file system
// ids around each open (setfsuid), leaves nothing unchecked: load objects are read by several
// packages (symbols, debug information and the separate debug files it leads to, code), lazily and
// by path, and every one of those reads would need the check and the same file pinned against a
// link swapped in; a check by modes misses ACLs and directories' permissions. The new process has
// no terminal (a session of its own, stdin /dev/null, stdout and stderr through pipes whose control
// characters are not passed on) and none of root's environment but the locale, PATH and
// ER_DEBUG_DIR: the owner may trace it, as any process of theirs.

// selfExe is the program run again as an experiment's owner: er itself (in tests, the test program,
// whose TestMain runs Main when its first argument is "archive").
var selfExe = "/proc/self/exe"

// OwnerError says that an experiment belongs to another user than the one running er archive, who
// is not root and so cannot act as that user.
type OwnerError struct {
	Dir       string // the experiment whose archives/ would be written (the founder)
	Uid       uint32 // its owner
	Name, You string // the owner's and the running user's names ("uid N" where there is none)
}

// Error implements error.
func (e *OwnerError) Error() string {
	s := fmt.Sprintf("%s belongs to %s, not to %s, who runs er archive: it copies into an experiment only the files its owner may read, and only root can act as another user to check that; run er archive as %s",
		e.Dir, e.Name, e.You, e.Name)
	if e.Uid != 0 {
		s += " (or as root)"
	}
	return s
}

// experimentOwner returns the owner of the experiment directory dir (links in dir followed: the
// caller's choice of path).
func experimentOwner(dir string) (uint32, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no owner to be told", dir)
	}
	return st.Uid, nil
}

// founderOf is the experiment whose archives/ get dir's copies: its founder, or dir itself.
func founderOf(dir string) string {
	if f := experiment.FounderDir(dir); f != "" {
		return f
	}
	return dir
}

// checkOwner says, as an *OwnerError, when the experiment dir (a founder) belongs to another user
// than the one running er; nil when it is theirs, or when it cannot be examined (reading it says why).
func checkOwner(dir string) error {
	uid, err := experimentOwner(dir)
	if err != nil || uid == uint32(os.Geteuid()) {
		return nil
	}
	return &OwnerError{Dir: dir, Uid: uid, Name: userName(uid), You: userName(uint32(os.Geteuid()))}
}

// userName is the name of user uid, with its number: "bob (uid 1001)"; "uid N" without one.
func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// asOwner runs er archive with args (its options, then the experiment's absolute path) as the user
// uid, the experiment's owner, and returns its exit status; what it writes goes to stdout and
// stderr, without control characters.
func asOwner(uid uint32, args []string, stdout, stderr io.Writer) (int, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return 0, fmt.Errorf("its owner, uid %d, has no entry in the user database, so its groups are not known to act as it: %v; run er archive as that user", uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("its owner %s has group id %q: %v", u.Username, u.Gid, err)
	}
	var groups []uint32
	ids, err := u.GroupIds()
	if err != nil {
		return 0, fmt.Errorf("the groups of its owner %s cannot be told: %v; run er archive as that user", u.Username, err)
	}
	for _, g := range ids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			groups = append(groups, uint32(n))
		}
	}
	cmd := exec.Command(selfExe)
	cmd.Args = append([]string{"er", "archive"}, args...)
	cmd.Dir = "/"
	cmd.Env = ownerEnv(os.Environ(), u)
	cmd.Stdout = &plainWriter{w: stdout} // not an *os.File: a pipe, not the terminal
	cmd.Stderr = &plainWriter{w: stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uid, Gid: uint32(gid), Groups: groups},
		Setsid:     true, // no controlling terminal: /dev/tty cannot be opened to type into root's
		Pdeathsig:  syscall.SIGKILL,
	}
	err = cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		if ee.Exited() {
			return ee.ExitCode(), nil
		}
		return 0, fmt.Errorf("er archive, run as %s: %v", u.Username, ee)
	}
	if err != nil {
		return 0, fmt.Errorf("running er archive as %s: %v", u.Username, err)
	}
	return 0, nil
}

// ownerEnv is the environment of er archive run as the user u: of env, only the locale, PATH and
// ER_DEBUG_DIR; HOME, USER and LOGNAME u's (its cache is u's own).
func ownerEnv(env []string, u *user.User) []string {
	out := []string{"HOME=" + u.HomeDir, "USER=" + u.Username, "LOGNAME=" + u.Username}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "LANG", name == "LANGUAGE", name == "TZ", name == "ER_DEBUG_DIR", strings.HasPrefix(name, "LC_"):
			out = append(out, kv)
		}
	}
	return out
}

// plainWriter writes to w what is written to it less the control characters other than newline
// and tab: the output of a process another user may control is not to move root's cursor or
// rewrite its terminal.
type plainWriter struct{ w io.Writer }

// Write implements io.Writer.
func (p *plainWriter) Write(b []byte) (int, error) {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c != 0x7f || c == '\n' || c == '\t' {
			out = append(out, c)
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// archiveAsOwner archives dir as its owner where it is another user's and er runs as root, and
// says so (unless quiet); handled is false where dir is to be archived here, by this process.
func archiveAsOwner(dir string, opts []string, quiet bool, stdout, stderr io.Writer) (status int, handled bool) {
	if os.Geteuid() != 0 {
		return 0, false
	}
	founder := founderOf(dir)
	uid, err := experimentOwner(founder)
	if err != nil || uid == 0 {
		return 0, false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintf(stderr, "er archive: %s: %v\n", dir, err)
		return 1, true
	}
	if !quiet {
		who := userName(uid)
		fmt.Fprintf(stderr, "er archive: %s belongs to %s: it is archived as that user, with that user's permissions: files they may not read are not copied into it\n",
			founder, who)
	}
	code, err := asOwner(uid, append(append([]string(nil), opts...), abs), stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "er archive: %s: %v\n", dir, err)
		return 1, true
	}
	return code, true
}
