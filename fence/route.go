package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/net/netutil"
)

// A route is how a sandbox with no network reaches the proxy: a forwarder
// inside it (Forward) listens on its loopback and carries each connection
// as a stream of one multiplexed session over a byte stream the bot holds
// (the forwarder's stdin and stdout, attached through the engine's API);
// the bot serves each stream with the proxy (ServeRoute). The sandbox has
// no interface but loopback, so a process that ignores the proxy settings
// and dials an address reaches nothing, and the engine need not be on the
// bot's machine. yamux is the session: a well-kept multiplexer with flow
// control per stream, which a hand-made framing would have to grow.

// ListenAddr is where the forwarder listens inside the sandbox, and so the
// proxy address its processes are given.
const ListenAddr = "127.0.0.1:3128"

// Ready is the line the forwarder writes to its standard error once it
// listens: commands must not start before.
const Ready = "pullwright-fence-ready"

// maxConns bounds a route's connections served at once; package managers
// open a few dozen.
const maxConns = 64

func sessionConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	// The stream is a local pipe through the engine: a keep-alive would
	// only add traffic, and the session ends with the sandbox.
	c.EnableKeepAlive = false
	c.ConnectionWriteTimeout = 30 * time.Second
	// A closed stream's buffer is kept until this ends: at yamux's
	// default (5 minutes) a setup opening and dropping streams fast holds
	// gigabytes of the bot's memory, whatever maxConns says.
	c.StreamCloseTimeout = time.Second
	return c
}

// ServeRoute serves the proxy's side of a route until the session on conn
// ends or ctx is done; conn is closed on return.
func (p *Proxy) ServeRoute(ctx context.Context, conn io.ReadWriteCloser) error {
	sess, err := yamux.Server(conn, sessionConfig())
	if err != nil {
		conn.Close()
		return fmt.Errorf("fence: start the session: %w", err)
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		// A proxy request is a line and a few headers; the default
		// megabyte per connection is room for a setup to spend the bot's
		// memory.
		MaxHeaderBytes: 32 << 10,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	stop := context.AfterFunc(ctx, func() { srv.Close(); sess.Close() })
	defer stop()
	// A yamux session is a net.Listener of the streams the other side
	// opens; at most maxConns are served at once, each holding a stream's
	// window of the bot's memory, whatever the sandbox opens.
	err = srv.Serve(netutil.LimitListener(capped{sess}, maxConns))
	sess.Close()
	srv.Close()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, io.EOF) || sess.IsClosed() {
		return nil
	}
	return fmt.Errorf("fence: serve the route: %w", err)
}

// maxStreams ends a session whose side in the sandbox keeps more streams
// open than any package manager would, each a window of the bot's memory.
const maxStreams = 4 * maxConns

// capped is a session that ends when the sandbox opens too many streams.
type capped struct{ *yamux.Session }

func (c capped) Accept() (net.Conn, error) {
	conn, err := c.Session.Accept()
	if err == nil && c.NumStreams() > maxStreams {
		conn.Close()
		c.Close()
		return nil, fmt.Errorf("fence: the sandbox opened more than %d streams at once", maxStreams)
	}
	return conn, err
}

// RunForwarder is the forwarder's program (`bot fence-forward`): it
// listens on ListenAddr, says Ready on stderr, and forwards over stdin and
// stdout until the session ends.
func RunForwarder(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	l, err := net.Listen("tcp", ListenAddr)
	if err != nil {
		return fmt.Errorf("fence-forward: %w", err)
	}
	fmt.Fprintln(stderr, Ready)
	return Forward(ctx, l, stdin, stdout)
}

// Forward is the sandbox's side of a route: each connection accepted on l
// becomes a stream of a session over r and w (the forwarder's stdin and
// stdout). It returns when the session ends or ctx is done, closing l.
func Forward(ctx context.Context, l net.Listener, r io.Reader, w io.Writer) error {
	sess, err := yamux.Client(pipe{r, w}, sessionConfig())
	if err != nil {
		l.Close()
		return fmt.Errorf("fence: start the session: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { l.Close(); sess.Close() })
	defer stop()
	go func() {
		<-sess.CloseChan()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			sess.Close()
			if sess.IsClosed() || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("fence: accept: %w", err)
		}
		go func() {
			s, err := sess.OpenStream()
			if err != nil {
				c.Close()
				return
			}
			splice(c, s)
		}()
	}
}

// pipe joins a reader and a writer into the connection yamux wants.
type pipe struct {
	io.Reader
	io.Writer
}

func (p pipe) Close() error {
	var errs []error
	if c, ok := p.Reader.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := p.Writer.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
