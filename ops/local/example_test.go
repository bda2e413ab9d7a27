package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/pi-sandbox/pi-sandbox/ops"
	"github.com/pi-sandbox/pi-sandbox/ops/local"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	b, err := local.New(ctx, local.Config{WorkDir: dir})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	// stdout and stderr arrive merged, in the order they were written.
	var out bytes.Buffer
	err = b.Run(ctx, &ops.Cmd{Command: "echo hello; echo oops >&2; exit 3", Output: &out})
	fmt.Printf("%q %v\n", out.String(), err)

	// A timeout stops the whole tree and says so.
	err = b.Run(ctx, &ops.Cmd{Command: "sleep 60 & sleep 60", Timeout: 100 * time.Millisecond})
	var te *ops.TimeoutError
	fmt.Println(errors.As(err, &te), te.Limit)

	// File errors are *fs.PathError values carrying Node's codes.
	_, err = b.Stat(ctx, dir+"/missing.txt")
	fmt.Println(errors.Is(err, fs.ErrNotExist), ops.ErrnoOf(err).Code())
	// Output:
	// "hello\noops\n" ops: exit status 3
	// true 100ms
	// true ENOENT
}
