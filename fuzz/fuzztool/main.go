// Command fuzztool serves the fuzzing builders outside go test
// (.clusterfuzzlite/build.sh) and replays what they find:
//
//	fuzztool list
//	    one line per target of fuzz/targets: PACKAGE FUNCTION FUZZER, the
//	    arguments of compile_native_go_fuzzer_v2
//	fuzztool corpus -out DIR [-root .] [-encoding E | -builder DIR]
//	    DIR/FUZZER_seed_corpus.zip for every target, from the committed
//	    corpus files of packages fuzz and fuzz/machine under the module
//	    root, each input framed as the builder's
//	    testing package hands it to f.Fuzz
//	fuzztool repro -target NAME (-hex HEX | FILE) [-encoding E]
//	    run one input on one target: a failure prints its report and exits
//	    1, a pass exits 0; FILE is a go test corpus file (go test fuzz v1)
//	    or a libFuzzer test case (a crash file), unframed by -encoding
//
// Encodings (how a libFuzzer input becomes the one []byte or string
// argument of f.Fuzz): v2, the input.Source of go-118-fuzz-build's current
// testing package (one byte, then the argument); headers, its older
// go-fuzz-headers consumer (a 4-byte big-endian length, then the
// argument); raw, the bytes as they are (go-fuzz-style builders that call
// targets.X(data) directly). -builder DIR picks v2 or headers from the
// go-118-fuzz-build module in DIR (the version build.sh put in go.mod).
//
// Exit codes: 0 pass, 1 a failure, 2 a usage or input error.
package main

import (
	"archive/zip"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/storesim/storesim/fuzz/corpusfile"
	"github.com/storesim/storesim/fuzz/targets"
)

// fuzzer is how the builders know a target: its corpus directories
// (testdata/fuzz/<Target> of the package whose go test -fuzz target or
// test keeps them, relative to the module root) and its fuzzer binary name.
type fuzzer struct {
	target targets.Target
	name   string   // the binary, and FUZZER_seed_corpus.zip
	corpus []string // directories of committed corpus files, slash-separated
}

const pkg = "github.com/storesim/storesim/fuzz/targets"

// all are the targets repro knows (tests add a planted one).
var all = targets.All

func fuzzers() []fuzzer {
	seeds := map[string]struct {
		name   string
		corpus []string
	}{
		"OpLog":      {"storesim_oplog", []string{"fuzz/testdata/fuzz/FuzzOpLog"}},
		"ParseOpLog": {"storesim_parse_oplog", []string{"fuzz/testdata/fuzz/FuzzParseOpLog"}},
		// machine.Generate's inputs (TestBytesMachine keeps them), and
		// rapid's random bytes of the rapid state machine's corpus.
		"Machine": {"storesim_machine", []string{"fuzz/machine/testdata/fuzz/FuzzMachine", "fuzz/machine/testdata/fuzz/FuzzBackendStateMachine"}},
	}
	var out []fuzzer
	for _, t := range targets.All {
		s, ok := seeds[t.Name]
		if !ok {
			panic("fuzztool: target " + t.Name + " has no fuzzer name and corpus")
		}
		out = append(out, fuzzer{t, s.name, s.corpus})
	}
	return out
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: fuzztool list | corpus -out DIR | repro -target NAME (-hex HEX | FILE)")
		return 2
	}
	var err error
	switch args[0] {
	case "list":
		for _, f := range fuzzers() {
			fmt.Fprintf(stdout, "%s Fuzz%s %s\n", pkg, f.target.Name, f.name)
		}
		return 0
	case "corpus":
		err = corpusCmd(args[1:], stdout)
	case "repro":
		return reproCmd(args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("unknown command %q (want list, corpus or repro)", args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "fuzztool: %v\n", err)
		return 2
	}
	return 0
}

func corpusCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("corpus", flag.ContinueOnError)
	out := fs.String("out", "", "write FUZZER_seed_corpus.zip here")
	root := fs.String("root", ".", "the module root, which the committed corpus directories are under")
	enc := fs.String("encoding", "", "v2, headers or raw (default: from -builder, else v2)")
	builder := fs.String("builder", "", "the go-118-fuzz-build module directory whose testing package the build links")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return errors.New("corpus: want -out DIR and no arguments")
	}
	e, err := pickEncoding(*enc, *builder)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, f := range fuzzers() {
		path := filepath.Join(*out, f.name+"_seed_corpus.zip")
		n, err := writeZip(path, *root, f.corpus, e)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d inputs (%s)\n", path, n, e)
	}
	return nil
}

// pickEncoding is -encoding, or the encoding of the testing package in the
// -builder module: input.Source (input/reader.go) is v2.
func pickEncoding(enc, builder string) (string, error) {
	switch {
	case enc != "" && builder != "":
		return "", errors.New("give -encoding or -builder, not both")
	case enc != "":
		if enc != "v2" && enc != "headers" && enc != "raw" {
			return "", fmt.Errorf("-encoding %q: want v2, headers or raw", enc)
		}
		return enc, nil
	case builder != "":
		if _, err := os.Stat(filepath.Join(builder, "testing")); err != nil {
			return "", fmt.Errorf("-builder %s: not a go-118-fuzz-build module (%v)", builder, err)
		}
		if _, err := os.Stat(filepath.Join(builder, "input", "reader.go")); err == nil {
			return "v2", nil
		}
		return "headers", nil
	}
	return "v2", nil
}

// entry is one committed corpus input.
type entry struct {
	name string // DIR/FILE
	data []byte
}

// readCorpus reads every file of the corpus directories under root, sorted
// by name; each is named by its directory's last element (the target).
func readCorpus(root string, dirs []string) ([]entry, error) {
	var out []entry
	for _, d := range dirs {
		files, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(files))
		for _, f := range files {
			if !f.IsDir() {
				names = append(names, f.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			p := filepath.Join(root, filepath.FromSlash(d), n)
			text, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			data, err := parseCorpusFile(string(text))
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			out = append(out, entry{path.Base(d) + "/" + n, data})
		}
	}
	return out, nil
}

// parseCorpusFile reads a go test corpus file of one []byte or string
// value, as bytes.
func parseCorpusFile(text string) ([]byte, error) {
	v, err := corpusfile.Parse(text)
	return corpusfile.Bytes(v), err
}

// frame is data as a libFuzzer input that the testing package of the
// encoding hands to f.Fuzz as its one argument; false when it cannot (the
// headers consumer never yields an empty argument).
func frame(data []byte, enc string) ([]byte, bool) {
	switch enc {
	case "v2":
		return append([]byte{0}, data...), true
	case "headers":
		if len(data) == 0 {
			return nil, false
		}
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(data))), data...), true
	}
	return data, true
}

// unframe is the argument f.Fuzz gets from a libFuzzer input; false when
// the testing package would not call f.Fuzz's function at all.
func unframe(in []byte, enc string) ([]byte, bool) {
	switch enc {
	case "v2":
		if len(in) == 0 {
			return nil, true
		}
		return in[1:], true
	case "headers":
		if len(in) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(in)
		left := uint32(len(in) - 4)
		if n == 0 {
			n = 30
		}
		if left == 0 {
			return nil, false
		}
		if n != left {
			n %= left
		}
		return in[4 : 4+n], true
	}
	return in, true
}

func writeZip(path, root string, dirs []string, enc string) (int, error) {
	entries, err := readCorpus(root, dirs)
	if err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	zw := zip.NewWriter(f)
	n := 0
	for _, e := range entries {
		in, ok := frame(e.data, enc)
		if !ok {
			continue
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: strings.ReplaceAll(e.name, "/", "-"), Method: zip.Deflate})
		if err == nil {
			_, err = w.Write(in)
		}
		if err != nil {
			f.Close()
			return 0, err
		}
		n++
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}

func reproCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	name := fs.String("target", "", "the target (fuzztool list names them as FuzzNAME)")
	hexIn := fs.String("hex", "", "the input, in hex (what a failure's repro line gives)")
	enc := fs.String("encoding", "v2", "how FILE is framed when it is a libFuzzer test case: v2, headers or raw")
	fs.SetOutput(io.Discard)
	usage := func(err error) int {
		fmt.Fprintf(stderr, "fuzztool repro: %v\n", err)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return usage(err)
	}
	var t *targets.Target
	for i := range all {
		if all[i].Name == *name {
			t = &all[i]
		}
	}
	if t == nil {
		var names []string
		for _, t := range all {
			names = append(names, t.Name)
		}
		return usage(fmt.Errorf("-target %q: want one of %s", *name, strings.Join(names, ", ")))
	}
	var data []byte
	switch {
	case (*hexIn != "") == (fs.NArg() == 1) || fs.NArg() > 1:
		return usage(errors.New("give -hex HEX or one FILE"))
	case *hexIn != "":
		var err error
		if data, err = hex.DecodeString(*hexIn); err != nil {
			return usage(fmt.Errorf("-hex: %v", err))
		}
	default:
		raw, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return usage(err)
		}
		if strings.HasPrefix(string(raw), "go test fuzz v1\n") {
			if data, err = parseCorpusFile(string(raw)); err != nil {
				return usage(fmt.Errorf("%s: %v", fs.Arg(0), err))
			}
		} else {
			if _, err := pickEncoding(*enc, ""); err != nil {
				return usage(err)
			}
			var ok bool
			if data, ok = unframe(raw, *enc); !ok {
				return usage(fmt.Errorf("%s: the %s testing package would not run this input (too short)", fs.Arg(0), *enc))
			}
		}
	}
	if msg := runTarget(*t, data); msg != "" {
		fmt.Fprintln(stdout, msg)
		return 1
	}
	fmt.Fprintf(stdout, "%s: pass (%d bytes)\n", t.Name, len(data))
	return 0
}

// runTarget runs one input; the failure's panic message, or "".
func runTarget(t targets.Target, data []byte) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	t.Run(data)
	return ""
}
