package tcsandbox

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"

	"github.com/pi-sandbox/pi-sandbox/ops/docker"
)

// copyDir copies the host directory dir into dest in the created container
// id before it starts, owned by user: numeric "UID:GID" in the tar headers,
// a user name through the engine (docker cp -a; the engine cannot look up
// numeric ids). The workspace volume is then the user's, as the backend
// expects.
func copyDir(ctx context.Context, id, dir, dest, user string) error {
	uid, gid, numeric := numericUser(user)
	cli, err := docker.NewClient()
	if err != nil {
		return fmt.Errorf("tcsandbox: workspace: %w", err)
	}
	defer cli.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, dir, uid, gid)) }()
	_, err = cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dest, Content: pr, CopyUIDGID: !numeric})
	pr.CloseWithError(err) // ends writeTar if the copy failed early
	if err != nil {
		return fmt.Errorf("tcsandbox: workspace: copy %s to %s: %w", dir, dest, err)
	}
	return nil
}

// numericUser parses "UID:GID" or "UID" (then GID = UID).
func numericUser(user string) (uid, gid int, ok bool) {
	u, g, hasGID := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, false
	}
	if !hasGID {
		return uid, uid, true
	}
	gid, err = strconv.Atoi(g)
	return uid, gid, err == nil
}

// writeTar writes dir's contents (regular files, directories, symbolic
// links; nothing else) as a tar stream owned by uid:gid.
func writeTar(w io.Writer, dir string, uid, gid int) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular(), fi.IsDir():
		default:
			return nil
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.Uid, h.Gid = "", "", uid, gid
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
