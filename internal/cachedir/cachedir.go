// Package cachedir opens er's per-user cache directory and reads its files so that no other user can plant anything in it for er to follow, read or wait on.
//
// The cache (~/.cache/er, or $ER_CACHE_DIR) holds what er has read of load objects and the kernel,
// for later runs to use. Another user can reach it where it is in a directory of theirs: root's er
// run with a user's HOME (sudo keeps it on some systems) puts root's cache in that user's
// ~/.cache, where the user may put a link to elsewhere, a FIFO on which a read waits forever, or
// files of their making. So the cache directory is used only when it is a directory that belongs
// to the user running er and that no one else may enter (mode 0700; made so when er makes it); it
// is opened once and then reached through its descriptor (/proc/self/fd/N), so that a directory
// renamed or a link swapped in above it later changes nothing; and a file in it is read only when
// it is a regular file of that user's, opened without following a link and without blocking.
// What is refused is said on stderr once, with why and what to do.
package cachedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"er/internal/regfile"
)

// Warn says what is refused; tests replace it.
var Warn = func(msg string) { fmt.Fprintf(os.Stderr, "er: warning: %s\n", msg) }

var (
	mu     sync.Mutex
	roots  = map[string]string{} // a cache directory's path: its pinned path, "" where refused
	dirs   = map[string]string{} // a pinned path: the directory's path, for messages
	warned = map[string]bool{}   // messages said
)

// warnOnce says msg, once per process.
func warnOnce(msg string) {
	mu.Lock()
	seen := warned[msg]
	warned[msg] = true
	mu.Unlock()
	if !seen {
		Warn(msg)
	}
}

// Root returns the path through which to use the cache directory dir, made (mode 0700) if it is
// missing: /proc/self/fd/N of the directory opened once; "" where dir is "", cannot be made, or is
// refused (said once: another user's, or open to others, or not a directory).
func Root(dir string) string {
	if dir == "" {
		return ""
	}
	mu.Lock()
	root, ok := roots[dir]
	mu.Unlock()
	if ok {
		return root
	}
	root, why := open(dir)
	if why != "" {
		warnOnce(fmt.Sprintf("the cache directory %s is not used: %s", dir, why))
	}
	mu.Lock()
	defer mu.Unlock()
	if r, ok := roots[dir]; ok { // another goroutine was first: its descriptor stands
		if root != "" {
			closePinned(root)
		}
		return r
	}
	roots[dir] = root
	if root != "" {
		dirs[root] = dir
	}
	return root
}

// display is path, in the cache, as its directory was named: not through /proc/self/fd.
func display(path string) string {
	mu.Lock()
	defer mu.Unlock()
	for root, dir := range dirs {
		if rest, ok := strings.CutPrefix(path, root+"/"); ok {
			return dir + "/" + rest
		}
	}
	return path
}

// open opens the cache directory dir (links in its path followed: the user's choice of place) and
// checks it; why says why it is refused ("" when it is not, or when it cannot be made: a user
// without a home directory has no cache, and is not told so each time).
func open(dir string) (root, why string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if _, lerr := os.Lstat(dir); lerr != nil {
			return "", "" // missing, and cannot be made
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if fi, lerr := os.Stat(dir); lerr == nil && !fi.IsDir() {
			return "", fmt.Sprintf("it is %s, not a directory; remove it, and er makes the directory", regfile.Kind(fi.Mode()))
		}
		return "", err.Error()
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", err.Error()
	}
	if why := refuse(dir, st); why != "" {
		unix.Close(fd)
		return "", why
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), ""
}

// refuse says why the directory dir, of status st, is not to be used as the cache: "" when it
// belongs to the user running er and no one else may enter it.
func refuse(dir string, st unix.Stat_t) string {
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return fmt.Sprintf("it belongs to uid %d, not to uid %d who runs er, and that user could put files in it for er to read; use a directory of your own (set ER_CACHE_DIR, or HOME)", st.Uid, uid)
	}
	if m := st.Mode & 0o777; m&0o077 != 0 {
		return fmt.Sprintf("its mode is %04o: others may enter it; chmod 700 %s", m, dir)
	}
	return ""
}

// closePinned closes the descriptor of a path that Root made.
func closePinned(root string) {
	if fd, err := strconv.Atoi(root[len("/proc/self/fd/"):]); err == nil {
		unix.Close(fd)
	}
}

// ReadFile reads the file at path in the cache, of at most limit bytes: opened without following a
// link at its end and without blocking, and only a regular file of the user's running er. A file
// that is missing gives an error for which errors.Is(err, fs.ErrNotExist) holds; one that is
// refused is said once, and gives an error.
func ReadFile(path string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return nil, refused(path, "a symbolic link")
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(path, fi); err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, refused(path, fmt.Sprintf("%d bytes, more than a cache file holds (%d)", fi.Size(), limit))
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// Usable says whether the file at path in the cache may be read by path: it is a regular file (not
// a link) of the user's running er. A missing file is not, silently; one refused is said once.
func Usable(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && check(path, fi) == nil
}

// check says, as an error said once, why the cache file at path, of status fi, is not read: not a
// regular file, or another user's.
func check(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return refused(path, regfile.Kind(fi.Mode()))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uint32(os.Geteuid()) {
		return refused(path, fmt.Sprintf("a file of uid %d", st.Uid))
	}
	return nil
}

// errRefused is the error of a cache file that is refused.
var errRefused = errors.New("refused")

// refused says once that the cache file at path, which is what, is not read, and returns an error.
func refused(path, what string) error {
	warnOnce(fmt.Sprintf("the cache file %s is not read: it is %s, and er keeps only regular files of its own there (remove it)", display(path), what))
	return fmt.Errorf("%s: %w", display(path), errRefused)
}
