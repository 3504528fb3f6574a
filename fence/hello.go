package fence

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// helloTimeout bounds the wait for a tunnel's TLS ClientHello.
const helloTimeout = 10 * time.Second

// errHelloRead stops the TLS handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// Extensions that carry a second, encrypted ClientHello: its server name
// is hidden from the fence, so a hello with one is refused. 0xfe0d is
// Encrypted Client Hello, 0xffce its predecessor (encrypted SNI).
var hiddenNameExtensions = []uint16{0xfe0d, 0xffce}

// hello is what a tunnel's first bytes said.
type hello struct {
	ok         bool   // a ClientHello was read
	timedOut   bool   // none came in time
	serverName string // its SNI; "" when it names none
	hidden     bool   // it carries an encrypted inner hello
	read       []byte // every byte read, to forward unchanged
}

// clientHello reads the TLS ClientHello that starts a tunnel from r. The
// handshake goes no further: nothing is written to the client, and the
// proxy never holds a key.
func clientHello(r io.Reader) hello {
	var buf bytes.Buffer
	var h hello
	err := tls.Server(helloConn{r: io.TeeReader(r, &buf)}, &tls.Config{
		GetConfigForClient: func(info *tls.ClientHelloInfo) (*tls.Config, error) {
			h.ok, h.serverName = true, info.ServerName
			h.hidden = slices.ContainsFunc(info.Extensions, func(e uint16) bool { return slices.Contains(hiddenNameExtensions, e) })
			return nil, errHelloRead
		},
	}).Handshake()
	var ne net.Error
	h.timedOut = !h.ok && errors.As(err, &ne) && ne.Timeout()
	h.read = buf.Bytes()
	return h
}

// refusal says why a tunnel opened for host that began with h is
// refused, or "". Only the first hello is read: a client that the server
// asks for another (TLS 1.3's retry) must send the same name by the
// protocol, which the server, not the fence, holds it to.
func (h hello) refusal(host string) string {
	switch {
	case h.timedOut:
		return "no TLS hello within " + helloTimeout.String()
	case !h.ok:
		return "not TLS: the fence carries only TLS through CONNECT (plain http:// goes through it as a proxied request)"
	case h.hidden:
		return "the TLS hello hides the name it asks for (encrypted client hello)"
	case h.serverName == "" && isAddr(host):
		return ""
	case h.serverName == "":
		return "the TLS hello names no host; it must name " + host
	case !strings.EqualFold(strings.TrimSuffix(h.serverName, "."), strings.TrimSuffix(host, ".")):
		return "the TLS hello names " + strconv.Quote(shortName(h.serverName)) + ", not " + host
	}
	return ""
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
