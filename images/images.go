// Package images builds the container images pi-sandbox uses, without a
// registry: each image is made locally from Debian packages on
// the host, loaded into the engine with ImageImport, and cached under a
// content tag plus :latest, so a build runs only when its inputs changed.
//
// The list of images is a table: each recipe registers itself from its own
// file (busybox.go, debian.go, sshd.go), and [Builder.Ensure] builds what is
// missing, dependencies first.
//
// A Debian-based image is one call; pi-sandbox/sshd (sshd.go), for example:
//
//	images.Register(images.Image{
//		Name: "pi-sandbox/sshd",
//		Key:  func() ([]byte, error) { return images.DebianKey("sshd v1", images.SSHDPackages) },
//		Build: func(ctx context.Context, b *images.Builder, ref string) error {
//			return b.BuildDebian(ctx, ref, images.SSHDPackages, `rm -f "$1"/etc/ssh/ssh_host_*`)
//		},
//	})
//
// Building needs the engine, Debian's busybox-static (/bin/busybox), and
// for the Debian images mmdebstrap (or debootstrap), root, and the apt
// mirror the host uses.
package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// Image is one recipe.
type Image struct {
	// Name is the repository, e.g. "pi-sandbox/busybox".
	Name string
	// Summary is one line for listings.
	Summary string
	// Deps names images that must exist before Build runs.
	Deps []string
	// Key returns the inputs that determine the image's content; the
	// content tag is a hash of them. It may read host files.
	Key func() ([]byte, error)
	// Build builds the image and tags it ref (Name:content-tag). It writes
	// progress lines to b.Progress.
	Build func(ctx context.Context, b *Builder, ref string) error
}

var (
	mu       sync.Mutex
	registry = map[string]Image{}
)

// Register adds a recipe; it panics on a duplicate name (a programming
// error in an init function).
func Register(img Image) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[img.Name]; dup {
		panic("images: registered twice: " + img.Name)
	}
	registry[img.Name] = img
}

// Names returns the registered image names, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the recipe named name.
func Lookup(name string) (Image, bool) {
	mu.Lock()
	defer mu.Unlock()
	img, ok := registry[name]
	return img, ok
}

// ContentTag returns the tag of img's current inputs.
func ContentTag(img Image) (string, error) {
	key, err := img.Key()
	if err != nil {
		return "", fmt.Errorf("images: %s: %w", img.Name, err)
	}
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:6]), nil
}

// Builder builds images on one engine.
type Builder struct {
	Client *client.Client
	// Progress receives human-readable progress lines; nil discards them.
	Progress io.Writer
	// Force rebuilds images whose content tag is present.
	Force bool
	// Bootstrapper is "mmdebstrap" or "debootstrap" for the Debian images.
	// Zero: mmdebstrap when installed (faster; streams a tar), else
	// debootstrap.
	Bootstrapper string
}

func (b *Builder) logf(format string, args ...any) {
	if b.Progress != nil {
		fmt.Fprintf(b.Progress, format+"\n", args...)
	}
}

// Status describes one image on the engine.
type Status struct {
	Name    string
	Ref     string // Name:content-tag
	Present bool   // the content tag exists on the engine
}

// Check reports whether each named image's content tag is present.
func (b *Builder) Check(ctx context.Context, names ...string) ([]Status, error) {
	var out []Status
	for _, n := range names {
		img, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("images: unknown image %q (known: %v)", n, Names())
		}
		tag, err := ContentTag(img)
		if err != nil {
			return nil, err
		}
		ref := n + ":" + tag
		present, err := b.exists(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, Status{Name: n, Ref: ref, Present: present})
	}
	return out, nil
}

func (b *Builder) exists(ctx context.Context, ref string) (bool, error) {
	_, err := b.Client.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("images: inspect %s: %w", ref, err)
}

// Ensure builds each named image (all registered images when names is
// empty) whose content tag is missing, dependencies first, and points
// :latest at it.
func (b *Builder) Ensure(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		names = Names()
	}
	done := map[string]bool{}
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		if done[n] {
			return nil
		}
		if slices.Contains(path, n) {
			return fmt.Errorf("images: dependency cycle: %v", append(path, n))
		}
		img, ok := Lookup(n)
		if !ok {
			return fmt.Errorf("images: unknown image %q (known: %v)", n, Names())
		}
		for _, d := range img.Deps {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		done[n] = true
		return b.ensure(ctx, img)
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *Builder) ensure(ctx context.Context, img Image) error {
	tag, err := ContentTag(img)
	if err != nil {
		return err
	}
	ref := img.Name + ":" + tag
	present, err := b.exists(ctx, ref)
	if err != nil {
		return err
	}
	if present && !b.Force {
		b.logf("%s: present", ref)
	} else {
		b.logf("%s: building", ref)
		start := time.Now()
		if err := img.Build(ctx, b, ref); err != nil {
			return fmt.Errorf("images: build %s: %w", ref, err)
		}
		b.logf("%s: built in %s", ref, time.Since(start).Round(100*time.Millisecond))
	}
	if _, err := b.Client.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: img.Name + ":latest"}); err != nil {
		return fmt.Errorf("images: tag %s:latest: %w", img.Name, err)
	}
	return nil
}

// Import loads a root file system tar stream as image ref with the given
// Dockerfile-style changes ("ENV PATH=...", "CMD [...]").
func (b *Builder) Import(ctx context.Context, ref string, rootfs io.Reader, changes []string) error {
	resp, err := b.Client.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes, Message: "pi-sandbox image build"})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer resp.Close()
	return readJSONStream(resp, nil)
}

// readJSONStream reads an engine progress stream, passing "stream" text to
// out and returning the first error message.
func readJSONStream(r io.Reader, out io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("engine stream: %w", err)
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
		if out != nil && m.Stream != "" {
			io.WriteString(out, m.Stream)
		}
	}
}

// baseEnv is the PATH every image gets.
const basePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Layout of our images: the sandbox user and the directories the docker
// backend mounts volumes on. A new anonymous volume copies its mount point's
// owner, so creating these owned by the user makes the volumes writable for
// a container without CAP_CHOWN.
const (
	UserName  = "user"
	UserUID   = 1000
	UserGID   = 1000
	UserHome  = "/home/user"
	Workspace = "/workspace"
	StateDir  = "/var/lib/pi-sandbox"
)
