// Package keys is the store-key format of SPEC §1: `<prefix>/v<N>/<hex(name)>`.
//
// A [Scheme] fixes the prefix, the key-format version N (starting at 1) and
// the width of the names it encodes. [Scheme.Key] renders a name as lowercase
// hex; [Scheme.Parse] inverts it and refuses a key of another prefix, another
// version or another width, so changing the prefix or the version makes old
// objects miss — never hit wrongly.
package keys

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxPrefixLen is the longest prefix a scheme accepts, in bytes.
const MaxPrefixLen = 64

// Errors, tested with errors.Is.
var (
	// ErrBadScheme: NewScheme was given a prefix, version or width it cannot use.
	ErrBadScheme = errors.New("bad key scheme")
	// ErrBadName: Key was given a name of the wrong width.
	ErrBadName = errors.New("bad key name")
	// ErrForeignKey: Parse was given a key this scheme did not produce.
	ErrForeignKey = errors.New("foreign key")
)

// Scheme renders and parses the keys of one prefix, version and name width.
type Scheme struct {
	prefix  string
	version int
	nameLen int
	head    string // "<prefix>/v<N>/"
}

// NewScheme validates prefix (non-empty, at most 64 bytes, printable ASCII
// without '/' or whitespace), version (>= 1) and nameLen (>= 1 bytes).
func NewScheme(prefix string, version, nameLen int) (Scheme, error) {
	if err := checkPrefix(prefix); err != nil {
		return Scheme{}, err
	}
	if version < 1 {
		return Scheme{}, fmt.Errorf("%w: version %d < 1", ErrBadScheme, version)
	}
	if nameLen < 1 {
		return Scheme{}, fmt.Errorf("%w: name width %d < 1", ErrBadScheme, nameLen)
	}
	head := prefix + "/v" + strconv.Itoa(version) + "/"
	return Scheme{prefix: prefix, version: version, nameLen: nameLen, head: head}, nil
}

func checkPrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty prefix", ErrBadScheme)
	case len(p) > MaxPrefixLen:
		return fmt.Errorf("%w: prefix is %d bytes, at most %d", ErrBadScheme, len(p), MaxPrefixLen)
	}
	for i := 0; i < len(p); i++ {
		// Printable ASCII without space is 0x21..0x7e; '/' separates fields.
		if c := p[i]; c <= ' ' || c > '~' || c == '/' {
			return fmt.Errorf("%w: prefix byte %d is %q (want printable ASCII, no '/' or whitespace)", ErrBadScheme, i, c)
		}
	}
	return nil
}

// Prefix, Version and NameLen describe the scheme.
func (s Scheme) Prefix() string { return s.prefix }

// Version is the key-format version N.
func (s Scheme) Version() int { return s.version }

// NameLen is the width of names, in bytes.
func (s Scheme) NameLen() int { return s.nameLen }

// Key renders name. A name of the wrong width is an error, never a silently
// different key.
func (s Scheme) Key(name []byte) (string, error) {
	if s.head == "" {
		return "", fmt.Errorf("%w: zero Scheme (use NewScheme)", ErrBadScheme)
	}
	if len(name) != s.nameLen {
		return "", fmt.Errorf("%w: %d bytes, scheme %s wants %d", ErrBadName, len(name), s.head, s.nameLen)
	}
	var b strings.Builder
	b.Grow(len(s.head) + 2*len(name))
	b.WriteString(s.head)
	b.WriteString(hex.EncodeToString(name))
	return b.String(), nil
}

// Parse returns the name of a key this scheme produced. A key of another
// prefix, version or width, or with anything but lowercase hex after the
// version, is refused with an error wrapping [ErrForeignKey].
func (s Scheme) Parse(key string) ([]byte, error) {
	if s.head == "" {
		return nil, fmt.Errorf("%w: zero Scheme (use NewScheme)", ErrBadScheme)
	}
	rest, ok := strings.CutPrefix(key, s.head)
	if !ok {
		return nil, fmt.Errorf("%w: %q does not start with %q", ErrForeignKey, key, s.head)
	}
	if len(rest) != 2*s.nameLen {
		return nil, fmt.Errorf("%w: %q has %d hex digits, want %d", ErrForeignKey, key, len(rest), 2*s.nameLen)
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, fmt.Errorf("%w: %q: name byte %q is not lowercase hex", ErrForeignKey, key, c)
		}
	}
	name, err := hex.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrForeignKey, key, err)
	}
	return name, nil
}
