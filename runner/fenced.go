package runner

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/fence"
)

// ToolsDir is where a fenced run's forwarder is (the bot's binary, which a
// run that asks for it gets too: RunSpec.Bot), and every run's CA bundle
// when the operator gave one (ca.go), in a small volume of root's beside
// the workspace: nothing of the bot's lands among the repository's files.
const ToolsDir = "/.pullwright"

// forwarderName is the forwarder's file in ToolsDir: the bot's binary.
const forwarderName = "bot"

// forwarderStartTimeout bounds the wait for the forwarder to listen.
const forwarderStartTimeout = 15 * time.Second

// proxyEnv is what a fenced run's processes are told of the proxy, in the
// spellings package managers read.
func proxyEnv() []string {
	u := "http://" + fence.ListenAddr
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

// copyForwarder puts the forwarder into the container's ToolsDir, with
// its loader and libraries under forwarderLibDir when it is dynamic; the
// files are read from this host at each run.
func (d *Docker) copyForwarder(ctx context.Context, id string) error {
	type file struct{ name, path string }
	files := []file{{forwarderName, d.fwd.Program}}
	if d.fwd.Dynamic() {
		files = append(files, file{forwarderLibDir + "/" + path.Base(d.fwd.Interpreter), d.fwd.Interpreter})
		for _, l := range d.fwd.Libraries {
			files = append(files, file{forwarderLibDir + "/" + l.Name, l.Path})
		}
	}
	// Opened here, so that a file gone is this run's error, not a broken
	// archive the engine reports.
	opened := make([]*os.File, 0, len(files))
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for _, fl := range files {
		f, err := os.Open(fl.path)
		if err != nil {
			return fmt.Errorf("fence forwarder: %w", err)
		}
		opened = append(opened, f)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		var err error
		if d.fwd.Dynamic() {
			err = tw.WriteHeader(&tar.Header{Name: forwarderLibDir + "/", Mode: 0o555, Uid: 0, Gid: 0,
				ModTime: time.Now(), Typeflag: tar.TypeDir, Format: tar.FormatPAX})
		}
		for i := 0; err == nil && i < len(files); i++ {
			err = writeTarFile(tw, files[i].name, opened[i])
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: ToolsDir, Content: pr})
	pr.CloseWithError(errCopyEnded)
	if err != nil {
		return fmt.Errorf("copy the fence forwarder into the container: %w", err)
	}
	return nil
}

// writeTarFile writes f as name, root's, in root's ToolsDir: the command
// may run it, not replace it.
func writeTarFile(tw *tar.Writer, name string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o555, Size: fi.Size(), Uid: 0, Gid: 0,
		ModTime: fi.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// startForwarder starts the forwarder in container id and serves its
// stream with route until stop is called, after the command ended.
func (d *Docker) startForwarder(ctx context.Context, log *slog.Logger, id string, route pullwright.Route) (stop func(), err error) {
	ex, err := d.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User: d.cfg.User, Cmd: d.fwd.command(),
		// An image's ENV reaches an exec: blanked, the variables that
		// make a loader run more code than the forwarder's own.
		Env:         forwarderEnv(),
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create the fence forwarder: %w", err)
	}
	att, err := d.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("start the fence forwarder: %w", err)
	}
	// stdout is the session's bytes; stderr says when it listens, or why
	// it could not.
	out, outW := io.Pipe()
	errs := &readyWatcher{ready: make(chan struct{}), ended: make(chan struct{})}
	demuxed := make(chan struct{})
	go func() {
		defer close(demuxed)
		_, err := stdcopy.StdCopy(outW, errs, att.Reader)
		outW.CloseWithError(err)
		errs.end()
	}()
	timer := time.NewTimer(forwarderStartTimeout)
	defer timer.Stop()
	select {
	case <-errs.ready:
	case <-errs.ended:
		att.Close()
		<-demuxed
		return nil, fmt.Errorf("the fence forwarder ended before it listened: %s", errs.text())
	case <-timer.C:
		att.Close()
		<-demuxed
		return nil, fmt.Errorf("the fence forwarder did not listen within %s: %s", forwarderStartTimeout, errs.text())
	case <-ctx.Done():
		att.Close()
		<-demuxed
		return nil, fmt.Errorf("run: %w", ctx.Err())
	}
	routeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() {
		served <- route.ServeRoute(routeCtx, &execStream{r: out, conn: att})
	}()
	return func() {
		cancel()
		att.Close()
		<-demuxed
		if err := <-served; err != nil {
			log.Warn("runner: the fence's route ended with an error", "err", err)
		}
	}, nil
}

// execStream is the forwarder's stdin (the hijacked connection) and its
// demultiplexed stdout.
type execStream struct {
	r    io.Reader
	conn client.ExecAttachResult
}

func (s *execStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *execStream) Write(p []byte) (int, error) { return s.conn.Conn.Write(p) }
func (s *execStream) Close() error {
	s.conn.Close()
	return nil
}

// readyWatcher reads the forwarder's stderr: it closes ready at the line
// fence.Ready and keeps the rest (bounded) for an error message.
type readyWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	line  []byte
	ready chan struct{}
	once  sync.Once
	ended chan struct{}
	eOnce sync.Once
}

func (w *readyWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 4096 {
		w.buf.Write(p[:min(len(p), 4096-w.buf.Len())])
	}
	sc := bufio.NewScanner(bytes.NewReader(append(w.line, p...)))
	var last []byte
	for sc.Scan() {
		last = sc.Bytes()
		if string(last) == fence.Ready {
			w.once.Do(func() { close(w.ready) })
		}
	}
	if len(p) > 0 && p[len(p)-1] != '\n' {
		w.line = append([]byte(nil), last...)
	} else {
		w.line = nil
	}
	return len(p), nil
}

func (w *readyWatcher) end() { w.eOnce.Do(func() { close(w.ended) }) }

func (w *readyWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.TrimSpace(strings.ReplaceAll(w.buf.String(), fence.Ready, ""))
	if s == "" {
		return "it said nothing"
	}
	return s
}

// errNoForwarder is a fenced run, or one that asks for the bot's binary,
// on a runner that has no forwarder.
var errNoForwarder = errors.New("run: a fenced run, and one given the bot's binary, needs DockerConfig.Forwarder, a Linux build of the bot")

// prepareCaches makes each writable cache's CacheFiles directory the
// sandbox user's, through the engine's API like the workspace.
func (d *Docker) prepareCaches(ctx context.Context, id string, caches []pullwright.CacheMount) error {
	uid, gid, _ := parseUser(d.cfg.User)
	for _, c := range caches {
		if c.ReadOnly {
			continue
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(&tar.Header{Name: CacheFiles + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: gid,
			ModTime: time.Now(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if _, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: c.Target, Content: &buf}); err != nil {
			return fmt.Errorf("prepare cache %s: %w", c.Volume, err)
		}
	}
	return nil
}
