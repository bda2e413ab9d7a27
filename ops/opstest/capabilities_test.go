package opstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// TestCapabilityListComplete fails when package ops declares an interface
// that is neither in Capabilities nor in NotCapabilities: a new optional
// capability must be listed, so that the wrapper tests check it.
func TestCapabilityListComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, ty := range append(append([]reflect.Type{}, Capabilities...), NotCapabilities...) {
		listed[ty.Name()] = true
	}
	pkgs, err := parser.ParseDir(token.NewFileSet(), "..", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range pkgs["ops"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				return true
			}
			if _, ok := ts.Type.(*ast.InterfaceType); ok {
				found++
				if !listed[ts.Name.Name] {
					t.Errorf("ops.%s is an interface in neither opstest.Capabilities nor opstest.NotCapabilities", ts.Name.Name)
				}
			}
			return true
		})
	}
	if found != len(listed) {
		t.Errorf("package ops declares %d interfaces, the lists name %d", found, len(listed))
	}
}
