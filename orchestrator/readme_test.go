package orchestrator_test

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// readmeSnippet returns the README's fenced ```go block that uses
// orchestrator.New: the library snippet of "As a library".
func readmeSnippet(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatalf("reading the README: %v", err)
	}
	var found [][]byte
	rest := data
	for {
		i := bytes.Index(rest, []byte("\n```go\n"))
		if i < 0 {
			break
		}
		rest = rest[i+len("\n```go\n"):]
		j := bytes.Index(rest, []byte("\n```\n"))
		if j < 0 {
			t.Fatal("README: a ```go block is not closed")
		}
		if block := rest[:j+1]; bytes.Contains(block, []byte("orchestrator.New(")) {
			found = append(found, block)
		}
		rest = rest[j:]
	}
	if len(found) != 1 {
		t.Fatalf("README: want exactly one ```go block using orchestrator.New, found %d", len(found))
	}
	return found[0]
}

// importsAndBody returns the import paths of a file and the source text of
// the body of its function fn.
func importsAndBody(t *testing.T, name string, src []byte, fn string) (imports []string, body string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s does not parse: %v", name, err)
	}
	for _, im := range f.Imports {
		imports = append(imports, im.Path.Value)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && fd.Body != nil {
			return imports, string(src[fset.Position(fd.Body.Pos()).Offset:fset.Position(fd.Body.End()).Offset])
		}
	}
	t.Fatalf("%s has no func %s", name, fn)
	return nil, ""
}

// TestREADMESnippetIsExample: the README's library snippet is a whole
// program (package main, imports, func main) that is gofmt-clean and has
// exactly the imports and the body, comments included, of Example in
// example_readme_test.go, which the compiler checks. Edit both together.
func TestREADMESnippetIsExample(t *testing.T) {
	snippet := readmeSnippet(t)
	if !bytes.HasPrefix(snippet, []byte("package main\n")) {
		t.Errorf("README snippet does not start with \"package main\": it must compile as written")
	}
	formatted, err := format.Source(snippet)
	if err != nil {
		t.Fatalf("README snippet: %v", err)
	}
	if !bytes.Equal(formatted, snippet) {
		t.Errorf("README snippet is not gofmt-clean; gofmt gives:\n%s", formatted)
	}
	example, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	rImports, rBody := importsAndBody(t, "README.md snippet", snippet, "main")
	eImports, eBody := importsAndBody(t, "example_readme_test.go", example, "Example")
	if strings.Join(rImports, " ") != strings.Join(eImports, " ") {
		t.Errorf("imports differ:\nREADME  %v\nExample %v", rImports, eImports)
	}
	if rBody != eBody {
		t.Errorf("README snippet's main and Example differ:\n--- README\n%s\n--- Example\n%s", rBody, eBody)
	}
}
