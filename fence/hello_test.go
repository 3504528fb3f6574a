package fence

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// helloBytes is the ClientHello Go's TLS client sends for serverName, as
// one record.
func helloBytes(t *testing.T, serverName string) []byte {
	t.Helper()
	client, server := net.Pipe()
	go func() {
		c := tls.Client(client, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
		_ = c.Handshake() // fails when the pipe closes
	}()
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 5)
	if _, err := io.ReadFull(server, head); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(head[3:5]))
	if _, err := io.ReadFull(server, body); err != nil {
		t.Fatal(err)
	}
	server.Close()
	client.Close()
	return append(head, body...)
}

// withExtension appends extension typ with data to a one-record hello,
// fixing the lengths that hold it.
func withExtension(t *testing.T, h []byte, typ uint16, data []byte) []byte {
	t.Helper()
	out := append([]byte(nil), h...)
	body := out[9:] // after the record (5) and handshake (4) headers
	i := 2 + 32     // version, random
	i += 1 + int(body[i])
	i += 2 + int(binary.BigEndian.Uint16(body[i:]))
	i += 1 + int(body[i])
	extLen := int(binary.BigEndian.Uint16(body[i:]))
	if 9+i+2+extLen != len(out) {
		t.Fatalf("the hello has something after its extensions")
	}
	ext := binary.BigEndian.AppendUint16(nil, typ)
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(data)))
	ext = append(ext, data...)
	binary.BigEndian.PutUint16(out[9+i:], uint16(extLen+len(ext)))
	out = append(out, ext...)
	hsLen := len(out) - 9
	out[6], out[7], out[8] = byte(hsLen>>16), byte(hsLen>>8), byte(hsLen)
	binary.BigEndian.PutUint16(out[3:5], uint16(len(out)-5))
	return out
}

func TestClientHello(t *testing.T) {
	plain := helloBytes(t, "mirror.test")
	// An encrypted client hello's outer extension: config id, cipher
	// suite, encapsulated key and payload, which the fence cannot read.
	ech := withExtension(t, plain, 0xfe0d, append([]byte{0, 0, 1, 0, 1, 0x42, 0, 4, 1, 2, 3, 4, 0, 3}, 5, 6, 7))
	tests := []struct {
		name   string
		in     []byte
		host   string
		refuse string
	}{
		{"the name asked for", plain, "mirror.test", ""},
		{"another name", plain, "other.test", `the TLS hello names "mirror.test", not other.test`},
		{"an encrypted inner hello", ech, "mirror.test", "the TLS hello hides the name it asks for (encrypted client hello)"},
		{"an unknown extension is fine", withExtension(t, plain, 0x7777, []byte{1}), "mirror.test", ""},
		{"not TLS", []byte("GET / HTTP/1.1\r\nHost: mirror.test\r\n\r\n"), "mirror.test", "not TLS: the fence carries only TLS through CONNECT (plain http:// goes through it as a proxied request)"},
		{"cut short", plain[:40], "mirror.test", "not TLS: the fence carries only TLS through CONNECT (plain http:// goes through it as a proxied request)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := []byte("early bytes after the hello")
			h := clientHello(io.MultiReader(bytes.NewReader(tt.in), bytes.NewReader(after)))
			if got := h.refusal(tt.host); got != tt.refuse {
				t.Errorf("refusal = %q, want %q", got, tt.refuse)
			}
			// What was read is forwarded as it came: a prefix of the input.
			if all := append(append([]byte(nil), tt.in...), after...); !bytes.HasPrefix(all, h.read) || (h.ok && len(h.read) < len(tt.in)) {
				t.Errorf("read %d bytes that are not the input's first (hello of %d)", len(h.read), len(tt.in))
			}
		})
	}
	// A client that sends nothing is cut off by the deadline, and told so.
	client, server := net.Pipe()
	defer client.Close()
	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if got := clientHello(server).refusal("mirror.test"); got != "no TLS hello within 10s" {
		t.Errorf("silent client: refusal %q", got)
	}
}
