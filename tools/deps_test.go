package tools

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDeps enforces the dependency rule: tools reach files and
// processes only through ops, so they behave the same on every backend.
func TestDeps(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go" // from PATH
	}
	out, err := exec.Command(goBin, "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	bad := map[string]string{
		"os/exec":                                     "tools run commands through ops.Runner",
		"github.com/moby/":                            "Docker belongs to ops/docker",
		"github.com/docker/":                          "Docker belongs to ops/docker",
		"golang.org/x/crypto/ssh":                     "SSH belongs to ops/ssh",
		"github.com/pkg/sftp":                         "SFTP belongs to ops/ssh",
		"github.com/pi-sandbox/pi-sandbox/ops/local":  "tools must not know the backends",
		"github.com/pi-sandbox/pi-sandbox/ops/docker": "tools must not know the backends",
		"github.com/pi-sandbox/pi-sandbox/ops/ssh":    "tools must not know the backends",
		"github.com/pi-sandbox/pi-sandbox/sandbox":    "sandbox depends on tools, not the reverse",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list printed too little: %q", out)
	}
	for _, d := range deps {
		for prefix, why := range bad {
			if d == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(d, prefix) && strings.HasSuffix(prefix, "/") ||
				strings.HasPrefix(d, prefix+"/") {
				t.Errorf("tools depends on %s: %s", d, why)
			}
		}
	}
}

// osAllowed are the os identifiers that are not file or process APIs.
var osAllowed = map[string]bool{
	"O_RDONLY": true, "O_WRONLY": true, "O_RDWR": true, "O_CREATE": true, "O_EXCL": true,
	"O_TRUNC": true, "O_APPEND": true, "O_SYNC": true, "FileMode": true, "ModePerm": true,
	"ErrNotExist": true, "ErrExist": true, "ErrPermission": true, "ErrClosed": true,
	"ErrDeadlineExceeded": true,
}

// allowedSel reports whether pkg.name is a constant or error value rather
// than a file or process API.
func allowedSel(pkg, name string) bool {
	switch {
	case strings.HasPrefix(name, "O_"):
		return true
	case pkg == "os":
		return osAllowed[name]
	case pkg == "syscall":
		return name == "Errno" || name == "Signal" || strings.HasPrefix(name, "SIG") ||
			len(name) > 1 && name[0] == 'E' && strings.ToUpper(name) == name
	}
	return false
}

// TestNoOSFileAPIs checks the non-test files of tools: "os" and "syscall"
// may be imported for open flags, signals and error values only.
func TestNoOSFileAPIs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		local := map[string]string{} // local name → "os" or "syscall"
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch p {
			case "os", "syscall":
				n := p
				if imp.Name != nil {
					n = imp.Name.Name
				}
				if n == "_" || n == "." {
					t.Errorf("%s imports %s as %s", name, p, n)
				}
				local[n] = p
			case "io/ioutil", "path/filepath":
				t.Errorf("%s imports %s: use ops and path (target paths are POSIX)", name, p)
			}
		}
		if len(local) == 0 {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if pkg, ok := local[id.Name]; ok && !allowedSel(pkg, sel.Sel.Name) {
				t.Errorf("%s: %s.%s is a file or process API; go through ops", fset.Position(sel.Pos()), pkg, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}

func TestAllowedSel(t *testing.T) {
	for _, c := range []struct {
		pkg, name string
		ok        bool
	}{
		{"os", "O_CREATE", true}, {"os", "ErrNotExist", true}, {"syscall", "O_CREAT", true},
		{"syscall", "ENOENT", true}, {"syscall", "SIGKILL", true},
		{"os", "ReadFile", false}, {"os", "Open", false}, {"os", "Getwd", false},
		{"syscall", "Kill", false}, {"syscall", "Exec", false}, {"syscall", "Environ", false},
	} {
		if got := allowedSel(c.pkg, c.name); got != c.ok {
			t.Errorf("allowedSel(%s.%s) = %v", c.pkg, c.name, got)
		}
	}
}
