package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the nodes one file may make the decoder visit. Aliases
// are followed, so a few lines of anchors can stand for billions of nodes
// ("billion laughs"); a real configuration has a few hundred.
const maxNodes = 20000

// maxFileSize bounds what is handed to the YAML parser: a real
// configuration is a few kilobytes.
const maxFileSize = 256 << 10

// decoder walks a yaml.Node tree into a Go value by the value's yaml
// tags. yaml.v3's own strict mode stops at the first unknown key and does
// not name the path; this walker reports every problem with its line and
// dotted key, and records where each key was written.
type decoder struct {
	errs  *Errors
	lines map[string]int
	nodes int
	// tooBig is set once maxNodes is exceeded, to report it only once.
	tooBig bool
}

// parseYAML parses one YAML document. It returns nil (and no problem)
// for an empty document, and records syntax errors in errs.
func parseYAML(data []byte, errs *Errors) (root *yaml.Node) {
	// The parser is third-party code fed with text anyone with push
	// access writes; a panic in it must become a report, not take down
	// the process that serves every installation.
	defer func() {
		if r := recover(); r != nil {
			errs.add(0, "", "the file could not be parsed as YAML (%v)", r)
			root = nil
		}
	}()
	if blank(data) {
		return nil
	}
	if len(data) > maxFileSize {
		errs.add(0, "", "the file is %d bytes; a configuration file is at most %d", len(data), maxFileSize)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		line, msg := yamlErrorLine(err, data)
		if strings.Contains(msg, "cannot start any token") && bytes.Contains(data, []byte("\t")) {
			msg += " (YAML does not allow tabs for indentation; use spaces)"
		}
		errs.add(line, "", "%s", msg)
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		errs.add(next.Line, "", "the file holds more than one YAML document (a line with ---); keep all settings in one")
		return nil
	case !errors.Is(err, io.EOF):
		line, msg := yamlErrorLine(err, data)
		errs.add(line, "", "%s", msg)
		return nil
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		return doc.Content[0]
	}
	return &doc
}

// blank reports a file of only whitespace and comments, which YAML would
// mostly take as empty too, except that it refuses a tab in the wrong
// place: an empty file must never be an error.
func blank(data []byte) bool {
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

var (
	yamlLineRE      = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?((?s).*)$`)
	unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlErrorLine splits yaml.v3's "yaml: line 4: did not find expected
// key" into the line and the rest. The parser gives no line for an alias
// to an unknown anchor, so that one is looked up in the text.
func yamlErrorLine(err error, data []byte) (int, string) {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, "invalid YAML: " + err.Error()
	}
	line, _ := strconv.Atoi(m[1])
	if a := unknownAnchorRE.FindStringSubmatch(m[2]); a != nil && line == 0 {
		if i := bytes.Index(data, []byte("*"+a[1])); i >= 0 {
			line = 1 + bytes.Count(data[:i], []byte("\n"))
		}
	}
	return line, "invalid YAML: " + m[2]
}

// decodeDocument decodes the top-level mapping root into v, a pointer to
// a struct.
func (d *decoder) decodeDocument(root *yaml.Node, v any) {
	if root == nil {
		return
	}
	n, ok := d.deref(root)
	if !ok {
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errs.add(n.Line, "", "the file must be a set of keys and values (like model: gpt-4.1-mini), not %s", describe(n))
		return
	}
	d.value(n, reflect.ValueOf(v).Elem(), "")
}

// isNull reports whether n is (an alias of) a YAML null: "key:" with
// nothing after it, which means "not set".
func isNull(n *yaml.Node) bool {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode && hops < 100; hops++ {
		n = n.Alias
	}
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// deref follows aliases and counts the visit against maxNodes.
func (d *decoder) deref(n *yaml.Node) (*yaml.Node, bool) {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > 100 {
			d.errs.add(n.Line, "", "an alias refers to itself")
			return nil, false
		}
		n = n.Alias
	}
	if n == nil {
		return nil, false
	}
	d.nodes++
	if d.nodes > maxNodes {
		if !d.tooBig {
			d.tooBig = true
			d.errs.add(n.Line, "", "the file is too large (or its aliases expand too far): more than %d values", maxNodes)
		}
		return nil, false
	}
	return n, true
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// value decodes n into v. A null leaves v as it is: "not set", which for
// the operator's file keeps the built-in default.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	n, ok := d.deref(n)
	if !ok {
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, path, "%s", err.Error())
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structValue(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s (write one item per line, each starting with \"- \", or [a, b])", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = item.Line
			d.value(item, s.Index(i), p)
		}
		v.Set(s)
	case reflect.Map:
		d.mapValue(n, v, path)
	case reflect.Pointer:
		// A value that may be unset, such as a boolean whose default is
		// true: nil unless the value decodes.
		e := reflect.New(v.Type().Elem())
		problems := func() int { return len(d.errs.List) + d.errs.More }
		before := problems()
		d.value(n, e.Elem(), path)
		if problems() == before {
			v.Set(e)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			// The usual hint, to quote a number, would lead to a size
			// in bytes, too small to be meant: show the units instead.
			if strings.HasSuffix(path, "memory") || strings.HasSuffix(path, "disk") {
				d.fail(n, path, "expected a size like 2GiB or 512MiB, got %s", describe(n))
				return
			}
			d.fail(n, path, "expected text, got %s%s", describe(n), quoteHint(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.fail(n, path, "expected a whole number, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(n, path, "expected a finite number, got %s", n.Value)
			return
		}
		v.SetFloat(f)
	default:
		// Only reachable if a field of a type the walker does not know
		// is added to Config or Operator; the tests decode every field.
		d.fail(n, path, "internal error: cannot decode into %s", v.Type())
	}
}

// fail reports a value that could not be decoded, and forgets that the
// key was written, so that the checks of values that follow do not report
// the zero value left behind as a second problem.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.errs.add(n.Line, path, format, args...)
	delete(d.lines, path)
}

// field is one yaml key of a struct, with the index path to reach it
// through ",inline" embedded structs.
type field struct {
	name  string
	index []int
}

func yamlFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			for _, sub := range yamlFields(f.Type) {
				out = append(out, field{sub.name, append([]int{i}, sub.index...)})
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name, []int{i}})
	}
	return out
}

// textHinter is a struct often written as bare text by mistake; its
// hint shows how that text is written in the struct's form.
type textHinter interface{ textHint(text string) string }

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		hint := ""
		if h, ok := v.Interface().(textHinter); ok && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
			hint = h.textHint(n.Value)
		}
		if hint != "" {
			d.fail(n, path, "expected keys and values, got %s: %s", describe(n), hint)
			return
		}
		d.fail(n, path, "expected keys and values (each on its own line below, indented), got %s", describe(n))
		return
	}
	fields := yamlFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := d.key(k, path, seen, join)
		if !ok {
			continue
		}
		p := join(path, keyName(name))
		var f *field
		for j := range fields {
			if fields[j].name == name {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			msg := "unknown key"
			if s := suggest(name, names); s != "" {
				msg += "; did you mean " + s + "?"
			} else {
				msg += " (known here: " + strings.Join(names, ", ") + ")"
			}
			d.errs.add(k.Line, p, "%s", msg)
			// The rest of this mapping is reported as it is; checks of
			// the mapping as a whole would only repeat the problem.
			delete(d.lines, path)
			continue
		}
		if !isNull(val) {
			d.lines[p] = k.Line
		}
		d.value(val, v.FieldByIndex(f.index), p)
	}
}

func (d *decoder) mapValue(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected keys and values, got %s", describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name, ok := d.key(k, path, seen, mapKey)
		if !ok {
			continue
		}
		p := mapKey(path, name)
		d.lines[p] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(reflect.ValueOf(name)); old.IsValid() {
			elem.Set(old)
		}
		d.value(val, elem, p)
		v.SetMapIndex(reflect.ValueOf(name), elem)
	}
}

// key checks one mapping key: a plain string, not a merge key, not a
// repeat of an earlier one.
func (d *decoder) key(k *yaml.Node, path string, seen map[string]int, child func(path, name string) string) (string, bool) {
	if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
		d.errs.add(k.Line, path, "merge keys (<<) are not supported; write the keys out")
		return "", false
	}
	if k.Kind != yaml.ScalarNode || (k.ShortTag() != "!!str" && k.ShortTag() != "!!int" && k.ShortTag() != "!!bool" && k.ShortTag() != "!!float") {
		d.errs.add(k.Line, path, "keys must be plain names, got %s", describe(k))
		return "", false
	}
	if first, dup := seen[k.Value]; dup {
		d.errs.add(k.Line, child(path, keyName(k.Value)), "set twice (first on line %d); keep one", first)
		return "", false
	}
	seen[k.Value] = k.Line
	return k.Value, true
}

// mapKey is the path of a key of a map, whose names (models such as
// gpt-4.1) may hold dots.
func mapKey(path, name string) string { return path + "[" + strconv.Quote(shorten(name, 60)) + "]" }

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`)

// keyName is a key as it appears in a path: as written if it is a plain
// name (all the known ones are), quoted otherwise, so that an unknown key
// with a newline or a dot in it cannot forge a line of the report or
// pass for a path.
func keyName(name string) string {
	if plainKeyRE.MatchString(name) {
		return name
	}
	return strconv.Quote(shorten(name, 60))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names what a node is, for "expected X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "keys and values"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := shorten(n.Value, 60)
		switch n.ShortTag() {
		case "!!str":
			return "the text " + strconv.Quote(v)
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return v
		case "!!null":
			return "nothing"
		default:
			return strconv.Quote(v) + " (tagged " + n.ShortTag() + ")"
		}
	}
	return "something else"
}

// quoteHint helps with YAML's surprise that 1.10 and 2024-01-01 are not
// text.
func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Style == 0 {
		return fmt.Sprintf(" (put it in quotes if you mean the text: %q)", n.Value)
	}
	return ""
}

// suggest returns the closest of known to s within edit distance 2, or "".
func suggest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(s), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, on runes. Keys are short;
// very long unknown keys are cut off because nothing is that close.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 64
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes "10m" or "1h30m": the way people write durations in the
// file, and a form time.ParseDuration reads back.
func (d Duration) String() string { return fmtDuration(time.Duration(d)) }

// UnmarshalYAML accepts Go's duration syntax ("10m", "1h30m") and
// nothing that is not a positive duration: a bare number would be
// nanoseconds to Go and seconds to most readers.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return fmt.Errorf("expected a duration like 10m or 1h30m, got %s", describe(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the string form, so a Config survives a round trip.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes the string form ("10m0s"), which a person reading a
// stored task understands and UnmarshalJSON reads back.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads the string form; any duration, including zero, is
// accepted, because JSON is how the bot stores what it already checked.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: expected a string like \"10m\": %w", err)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write it like 10m or 1h30m)", shorten(s, 60))
	}
	if v <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (write it like 10m or 1h30m)", shorten(s, 60))
	}
	return v, nil
}

// shorten cuts s to at most n runes, so that a message quoting a value
// stays one readable line.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
