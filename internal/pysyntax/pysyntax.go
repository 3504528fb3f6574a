// Package pysyntax finds the first syntax error of Python source with
// tree-sitter's Python grammar, compiled to WebAssembly (check.wasm, rebuilt
// by csrc/build.sh from csrc/check.c) and run by wazero, so the bot stays pure Go
// (CGO_ENABLED=0). It only parses: the module has no access to files, the
// network or the clock, and each check runs in a fresh instance bounded in
// time and memory.
package pysyntax

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

//go:embed check.wasm
var checkWasm []byte

const (
	// memoryLimitPages bounds one check's memory: 64 KiB pages, 512 MiB,
	// several times what tree-sitter needs for an 8 MiB file.
	memoryLimitPages = 8192
	// checkTimeout bounds one check; tree-sitter parses a large file in
	// tens of milliseconds, so only a pathological one meets it.
	checkTimeout = 5 * time.Second
	// MaxSource bounds the source checked: tree-sitter's Python parser
	// runs at about 0.2 to 0.5 MB/s here, so a larger file would cost
	// seconds at every edit.
	MaxSource = 1 << 20
)

// Error is the first syntax error tree-sitter finds.
type Error struct {
	Line, Column int // 1-based; Column counts characters
	Message      string
}

// ErrUnchecked says the source could not be checked (too slow, too large, or
// the module failed); it says nothing about the source's syntax.
var ErrUnchecked = errors.New("python source not checked")

// Checker runs check.wasm. It is safe for concurrent use: each check gets
// its own module instance.
type Checker struct {
	rt  wazero.Runtime
	mod wazero.CompiledModule
}

// New compiles the module, which takes a moment; checks then reuse it.
func New(ctx context.Context) (*Checker, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithMemoryLimitPages(memoryLimitPages))
	// Not WithCloseOnContextDone: its checks at every loop and call made
	// parsing twice as slow; the module keeps its own deadline instead
	// (pc_check's timeout, on the host's monotonic clock).
	// WASI only for what wasi-libc's malloc and start-up import; the module
	// gets no directory, environment or arguments.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("pysyntax: instantiate wasi: %w", err)
	}
	mod, err := rt.CompileModule(ctx, checkWasm)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("pysyntax: compile check.wasm: %w", err)
	}
	return &Checker{rt: rt, mod: mod}, nil
}

// Close releases the compiled module.
func (c *Checker) Close(ctx context.Context) error {
	return c.rt.Close(ctx)
}

// shared is the Checker of Check, compiled on first use: compiling costs
// about as much as hundreds of checks, and a compiled module never changes.
var shared = sync.OnceValues(func() (*Checker, error) {
	return New(context.Background())
})

// Check is (*Checker).Check with a Checker shared by the process.
func Check(ctx context.Context, src []byte) (*Error, error) {
	c, err := shared()
	if err != nil {
		return nil, errors.Join(ErrUnchecked, err)
	}
	return c.Check(ctx, src)
}

// Check returns the first syntax error of src, nil when it parses, or an
// error wrapping ErrUnchecked when it could not tell.
func (c *Checker) Check(ctx context.Context, src []byte) (*Error, error) {
	if len(src) > MaxSource {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrUnchecked, len(src), MaxSource)
	}
	timeout := checkTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if timeout <= 0 || ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnchecked, context.Cause(ctx))
	}
	// An anonymous instance: many may run at once. Reactor modules are
	// initialised by _initialize, not started by _start.
	m, err := c.rt.InstantiateModule(ctx, c.mod, wazero.NewModuleConfig().
		WithName("").WithStartFunctions("_initialize").WithSysNanotime())
	if err != nil {
		return nil, fmt.Errorf("%w: instantiate: %w", ErrUnchecked, err)
	}
	defer m.Close(context.Background())

	alloc, check := m.ExportedFunction("pc_alloc"), m.ExportedFunction("pc_check")
	if alloc == nil || check == nil {
		return nil, fmt.Errorf("%w: check.wasm lacks its exports", ErrUnchecked)
	}
	const outLen = 6 * 4
	res, err := alloc.Call(ctx, uint64(len(src)+outLen))
	if err != nil || res[0] == 0 {
		return nil, fmt.Errorf("%w: allocate %d bytes: %v", ErrUnchecked, len(src), err)
	}
	srcPtr := uint32(res[0])
	outPtr := srcPtr + uint32(len(src))
	outPtr = (outPtr + 3) &^ 3 // uint32 alignment, within the slack of outLen
	if !m.Memory().Write(srcPtr, src) {
		return nil, fmt.Errorf("%w: write the source", ErrUnchecked)
	}
	res, err = check.Call(ctx, uint64(srcPtr), uint64(len(src)), uint64(outPtr), uint64(timeout.Milliseconds()+1))
	if err != nil {
		return nil, fmt.Errorf("%w: parse: %w", ErrUnchecked, err)
	}
	switch int32(res[0]) {
	case 0:
		return nil, nil
	case 1:
	case -2:
		return nil, fmt.Errorf("%w: no result in %v", ErrUnchecked, timeout)
	default:
		return nil, fmt.Errorf("%w: the parser could not be set up", ErrUnchecked)
	}
	raw, ok := m.Memory().Read(outPtr, outLen)
	if !ok {
		return nil, fmt.Errorf("%w: read the result", ErrUnchecked)
	}
	var out [6]uint32
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[i*4:])
	}
	row, byteCol, kind := int(out[0]), int(out[1]), out[2]
	start, end := int(out[4]), int(out[5])
	e := &Error{Line: row + 1, Column: column(src, start, byteCol)}
	if kind == 2 {
		name := "token"
		if s, ok := readCString(m.Memory().Read, out[3]); ok && s != "" {
			name = s
		}
		e.Message = "missing " + quoteToken(name)
		return e, nil
	}
	e.Message = "invalid syntax"
	if near := nearText(src, start, end); near != "" {
		e.Message += " near " + near
	}
	return e, nil
}

// column turns tree-sitter's 0-based byte column of the node starting at
// byte start into a 1-based count of characters.
func column(src []byte, start, byteCol int) int {
	if start > len(src) || byteCol > start {
		return byteCol + 1
	}
	return utf8.RuneCount(src[start-byteCol:start]) + 1
}

// quoteToken names a missing token as Python's messages do: punctuation and
// keywords in quotes, node kinds ("identifier") bare.
func quoteToken(name string) string {
	for _, r := range name {
		if r != '_' && (r < 'a' || r > 'z') {
			return "'" + name + "'"
		}
	}
	switch name {
	case "identifier", "string", "integer", "float", "expression", "block":
		return name
	}
	return "'" + name + "'"
}

// nearText is the start of the unexpected part, on one line and short, so
// the model can find it.
func nearText(src []byte, start, end int) string {
	if start < 0 || start >= end || end > len(src) {
		return ""
	}
	s := src[start:end]
	if i := bytes.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = bytes.TrimSpace(s)
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

// readCString reads a NUL-terminated string of at most 64 bytes.
func readCString(read func(offset, n uint32) ([]byte, bool), at uint32) (string, bool) {
	var b []byte
	for i := uint32(0); i < 64; i++ {
		c, ok := read(at+i, 1)
		if !ok {
			return "", false
		}
		if c[0] == 0 {
			return string(b), true
		}
		b = append(b, c[0])
	}
	return string(b), true
}
