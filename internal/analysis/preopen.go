package analysis

import (
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"er/internal/archive"
	"er/internal/experiment"
)

// Preopener opens the files of load objects ahead of their use, on goroutines of its own, a few at
// a time: er collect starts it on the objects its unwinder went through as soon as the target has
// exited, so that what its archiving then reads first (a separate debug file's DWARF: libc6-dbg's
// is some 10 MB to decompress) is read while er drains the rest of the samples and writes the
// experiment's files. OpenFile hands each file to the first who asks for it, where it is the file
// the archive describes; it opens any other as OpenObjectFile does.
type Preopener struct {
	mu    sync.Mutex
	files map[string]*preopened
	sem   chan struct{} // one token per goroutine that may open a file at once
}

// preopened is a file opened ahead, or being opened.
type preopened struct {
	done  chan struct{} // closed when opened (or not)
	a     *experiment.Archive
	of    *ObjectFile
	err   error
	taken bool // handed out: the next who asks opens the file again
}

// NewPreopener is a Preopener that opens at most workers files at once (at least 1).
func NewPreopener(workers int) *Preopener {
	return &Preopener{files: map[string]*preopened{}, sem: make(chan struct{}, max(workers, 1))}
}

// Open starts opening the files at paths that are absolute and not yet opened or being opened,
// the largest first (a large object is the one most likely to have much to read). It does not wait.
func (p *Preopener) Open(paths []string) {
	type file struct {
		path string
		size int64
	}
	var todo []file
	p.mu.Lock()
	for _, path := range paths {
		if _, ok := p.files[path]; ok || !strings.HasPrefix(path, "/") {
			continue
		}
		p.files[path] = &preopened{done: make(chan struct{})}
		todo = append(todo, file{path: path})
	}
	p.mu.Unlock()
	for i := range todo {
		if st, err := os.Stat(todo[i].path); err == nil {
			todo[i].size = st.Size()
		}
	}
	sort.SliceStable(todo, func(i, j int) bool { return todo[i].size > todo[j].size })
	order := make(chan string, len(todo))
	for _, f := range todo {
		order <- f.path
	}
	close(order)
	for range min(cap(p.sem), len(todo)) {
		go func() {
			for path := range order { // the largest not yet started
				p.sem <- struct{}{}
				p.mu.Lock()
				e := p.files[path]
				p.mu.Unlock()
				a, err := archive.Describe(path)
				if err == nil {
					e.of, err = OpenObjectFile(path, a)
				}
				e.a, e.err = a, err
				close(e.done)
				<-p.sem
			}
		}()
	}
}

// OpenFile is an Options.OpenFile: the file at path opened ahead (waiting for it while it is being
// opened) when it is the file that archive a describes, else OpenObjectFile(path, a).
func (p *Preopener) OpenFile(path string, a *experiment.Archive) (*ObjectFile, error) {
	p.mu.Lock()
	e := p.files[path]
	if e != nil && e.taken {
		e = nil
	}
	if e != nil {
		e.taken = true
	}
	p.mu.Unlock()
	if e != nil {
		<-e.done
		if e.err == nil && a != nil && sameObject(e.a, a) {
			return e.of, nil
		}
	}
	return OpenObjectFile(path, a)
}

// sameObject reports whether archives x and y describe the same file as SameFile tells it (the
// same build id; without one, the same size and modification time), with the same segments.
func sameObject(x, y *experiment.Archive) bool {
	if x.BuildID != "" || y.BuildID != "" {
		if x.BuildID != y.BuildID {
			return false
		}
	} else if x.Size != y.Size || x.Mtime != y.Mtime {
		return false
	}
	return slices.Equal(x.Segments, y.Segments)
}
