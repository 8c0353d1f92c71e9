package blobdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxName is the longest escaped object name kept as it is; a longer one
// is hashed. File systems limit one path component to 255 bytes and S3 a
// key to 1024; 200 leaves room for fileblob's temporary-file suffix.
const maxName = 200

// safeByte: the bytes an object name keeps as they are. Everything else,
// '/' and '.' included, is escaped, so a row key always names one flat
// object under the prefix: no directory can shadow another key's file
// (fileblob cannot hold a file "k" and a directory "k/" at once), no "..",
// and no name ends in fileblob's ".tmp" or ".attrs".
func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// escapeName is the object name of row key k (after the prefix): every
// unsafe byte as %XX (uppercase hex); a name longer than maxName becomes
// "%h" and the hex SHA-256 of k. Escaping never writes '%' followed by a
// byte that is not a hex digit, so the hashed form and the probe's
// "%probe-…" never meet an escaped key.
func escapeName(k string) string {
	const hexdig = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if safeByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&15])
	}
	if b.Len() > maxName || b.Len() == 0 {
		sum := sha256.Sum256([]byte(k))
		return "%h" + hex.EncodeToString(sum[:])
	}
	return b.String()
}

// ObjectKey is the bucket key row key k is stored under: Config.Prefix and
// k's escaped name (see the package doc, "Store layout").
func (d *Driver) ObjectKey(k string) string { return d.cfg.Prefix + escapeName(k) }
