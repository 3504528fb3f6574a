package buildcache

// The program (Serve) is the Go build cache of an approved run: a
// GOCACHEPROG program (the go command's protocol for a cache kept by
// another program) that reads a shared layer it never writes and writes a
// layer of the run's own.
//
//	GOCACHEPROG="bot gocacheprog -shared DIR -own DIR"
//
// The shared layer is what the bot's setup compiled from the default
// branch, mounted read-only; the own layer is the run's. A get looks in
// the own layer first, then the shared one; a put writes the own layer
// only. So what a run compiles never reaches a cache another task reads,
// and a run cannot change what it reads from the shared layer. The setup
// fills the shared layer with the same program, given only -own.
//
// It is the bot's own binary ("bot gocacheprog", hidden), which setup
// copies into the cache as it copies the fence's forwarder into a
// sandbox: nothing is compiled in a sandbox to serve the cache. A layer is
// two directories: a/ holds, per action ID, a line "v1 <output ID> <size>
// <unix nanoseconds>", and o/ holds the outputs by output ID.

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// request and response are the go command's messages
// (cmd/go/internal/cacheprog).
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// ErrUsage is Serve's answer to arguments it does not take.
var ErrUsage = errors.New("usage: bot gocacheprog [-shared DIR] -own DIR")

// Serve is "bot gocacheprog [-shared DIR] -own DIR": it answers the go
// command's requests on stdin, on stdout, until the go command closes the
// cache or its end of stdin.
func Serve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gocacheprog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shared := fs.String("shared", "", "the read-only layer, if any")
	own := fs.String("own", "", "the layer this program writes")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("gocacheprog: %w", ErrUsage)
	}
	if *own == "" || fs.NArg() != 0 {
		return fmt.Errorf("gocacheprog: %w", ErrUsage)
	}
	c, err := newCache(*shared, *own)
	if err != nil {
		return fmt.Errorf("gocacheprog: %w", err)
	}
	if err := c.serve(stdin, stdout); err != nil {
		return fmt.Errorf("gocacheprog: %w", err)
	}
	return nil
}

type cache struct {
	layers []string // own first
}

func newCache(shared, own string) (*cache, error) {
	own, err := filepath.Abs(own)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"a", "o"} {
		if err := os.MkdirAll(filepath.Join(own, d), 0o755); err != nil {
			return nil, fmt.Errorf("make the own layer: %w", err)
		}
	}
	c := &cache{layers: []string{own}}
	if shared != "" {
		shared, err := filepath.Abs(shared)
		if err != nil {
			return nil, err
		}
		c.layers = append(c.layers, shared)
	}
	return c, nil
}

// serve answers the go command's requests on in, one at a time, until it
// closes the cache or its input.
func (c *cache) serve(in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	send := func(r response) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return w.Flush()
	}
	if err := send(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read a request: %w", err)
		}
		var res response
		switch req.Command {
		case "get":
			res = c.get(req)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				if err := dec.Decode(&body); err != nil {
					return fmt.Errorf("read the body of request %d: %w", req.ID, err)
				}
			}
			res = c.put(req, body)
		case "close":
			return send(response{ID: req.ID})
		default:
			res = response{Err: "unknown command " + strconv.Quote(req.Command)}
		}
		res.ID = req.ID
		if err := send(res); err != nil {
			return err
		}
	}
}

func (c *cache) get(req request) response {
	action := hex.EncodeToString(req.ActionID)
	if len(req.ActionID) == 0 {
		return response{Err: "get without an action ID"}
	}
	for _, layer := range c.layers {
		line, err := os.ReadFile(filepath.Join(layer, "a", action))
		if err != nil {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) != 4 || f[0] != "v1" {
			continue
		}
		outID, err1 := hex.DecodeString(f[1])
		size, err2 := strconv.ParseInt(f[2], 10, 64)
		nanos, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || len(outID) == 0 {
			continue
		}
		body := filepath.Join(layer, "o", f[1])
		if fi, err := os.Stat(body); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
			continue // an output half written, or gone: compile again
		}
		t := time.Unix(0, nanos)
		return response{OutputID: outID, Size: size, Time: &t, DiskPath: body}
	}
	return response{Miss: true}
}

func (c *cache) put(req request, body []byte) response {
	if len(req.ActionID) == 0 || len(req.OutputID) == 0 {
		return response{Err: "put without an action or output ID"}
	}
	if int64(len(body)) != req.BodySize {
		return response{Err: fmt.Sprintf("put of %d bytes, %d said", len(body), req.BodySize)}
	}
	own := c.layers[0]
	out := hex.EncodeToString(req.OutputID)
	file := filepath.Join(own, "o", out)
	if err := writeFile(file, body); err != nil {
		return response{Err: err.Error()}
	}
	line := fmt.Sprintf("v1 %s %d %d\n", out, len(body), time.Now().UnixNano())
	if err := writeFile(filepath.Join(own, "a", hex.EncodeToString(req.ActionID)), []byte(line)); err != nil {
		return response{Err: err.Error()}
	}
	return response{DiskPath: file}
}

// writeFile writes name whole or not at all: another go command may read
// the layer at the same time.
func writeFile(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
