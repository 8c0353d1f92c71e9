package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// seedsAsStrings rewrites a JSON document so that every number under a key
// named seed or seeds (or ending in _seed or _seeds), and every number in
// an array under such a key, is a string: a 64-bit seed above 2^53 does not
// survive a reader that parses JSON numbers as float64 (JavaScript, jq,
// Python's json with some settings). Every other field, and the order of
// the fields, are kept. The output is indented like json.MarshalIndent's.
func seedsAsStrings(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := rewriteValue(dec, &out, false); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("seedsAsStrings: trailing data after the JSON value")
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return ind.Bytes(), nil
}

func isSeedKey(k string) bool {
	k = strings.ToLower(k)
	return k == "seed" || k == "seeds" || strings.HasSuffix(k, "_seed") || strings.HasSuffix(k, "_seeds")
}

// rewriteValue copies one JSON value from dec to out in compact form;
// seed says the value sits under a seed key.
func rewriteValue(dec *json.Decoder, out *bytes.Buffer, seed bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("seedsAsStrings: object key %v is not a string", k)
				}
				if i > 0 {
					out.WriteByte(',')
				}
				b, _ := json.Marshal(key)
				out.Write(b)
				out.WriteByte(':')
				if err := rewriteValue(dec, out, isSeedKey(key)); err != nil {
					return err
				}
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := rewriteValue(dec, out, seed); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case json.Number:
		if seed {
			b, _ := json.Marshal(t.String())
			out.Write(b)
			return nil
		}
		out.WriteString(t.String())
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		out.Write(b)
	}
	return nil
}
