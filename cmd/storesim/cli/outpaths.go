package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Output paths are checked before any work starts, so a long run never ends
// in "cannot write" with its results lost.

// checkOutFile refuses, as a usage error, a file path that could not be
// written at the end: a directory, a file in a directory that does not
// exist, or one that cannot be created or opened for writing. It leaves no
// file behind that was not there.
func checkOutFile(flagName, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return usagef("%s %s: is a directory; want a file path", flagName, path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usagef("%s %s: cannot be written: %v", flagName, path, unwrapPath(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return usagef("%s %s: %v", flagName, path, unwrapPath(err))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("%s %s: the directory %s does not exist (create it first)", flagName, path, dir)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return usagef("%s %s: cannot be created: %v", flagName, path, unwrapPath(err))
	}
	f.Close()
	return os.Remove(path)
}

// prepareOutDir makes run's --out directory now (with its parents), and
// refuses a path that is a file: the failure folders would be lost.
func prepareOutDir(flagName, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return usagef("%s %s: is a file, not a directory (run --out writes one folder per failing seed under it; give a directory path)", flagName, path)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return usagef("%s %s: cannot create the directory: %v", flagName, path, unwrapPath(err))
	}
	probe, err := os.CreateTemp(path, ".storesim-probe-*")
	if err != nil {
		return usagef("%s %s: cannot write in the directory: %v", flagName, path, unwrapPath(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// unwrapPath drops the *PathError's repetition of the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkInFile refuses an input file over the size storesim reads.
func checkInFile(path string, limit int64, doc string) error {
	st, err := os.Stat(path)
	if err == nil && !st.IsDir() && st.Size() > limit {
		return fmt.Errorf("%w: %s: the file is %d bytes; at most %d (%d MiB) (%s)", errInput, path, st.Size(), limit, limit>>20, doc)
	}
	return nil
}

// firstErr is the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
