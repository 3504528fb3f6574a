package fence

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// helloTimeout bounds the wait for a tunnel's TLS ClientHello.
const helloTimeout = 10 * time.Second

// errHelloRead stops the TLS handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// clientHello reads the TLS ClientHello that starts a tunnel from r and
// returns the name it asks for (SNI; "" when it names none) and every
// byte it read, which the caller forwards unchanged. The handshake goes
// no further: nothing is written to the client, and the proxy never
// holds a key.
func clientHello(r io.Reader) (serverName string, read []byte, ok bool) {
	var buf bytes.Buffer
	var name string
	seen := false
	err := tls.Server(helloConn{r: io.TeeReader(r, &buf)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name, seen = h.ServerName, true
			return nil, errHelloRead
		},
	}).Handshake()
	_ = err // errHelloRead when seen; otherwise not TLS, or cut short
	return name, buf.Bytes(), seen
}

// helloConn is a net.Conn that only reads: the TLS server that parses a
// ClientHello may try to send an alert, which goes nowhere.
type helloConn struct{ r io.Reader }

func (c helloConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (helloConn) Write(p []byte) (int, error)      { return 0, io.ErrClosedPipe }
func (helloConn) Close() error                     { return nil }
func (helloConn) LocalAddr() net.Addr              { return nil }
func (helloConn) RemoteAddr() net.Addr             { return nil }
func (helloConn) SetDeadline(time.Time) error      { return nil }
func (helloConn) SetReadDeadline(time.Time) error  { return nil }
func (helloConn) SetWriteDeadline(time.Time) error { return nil }
