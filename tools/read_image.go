package tools

import (
	"context"
	"encoding/base64"
	"io"

	"github.com/pi-sandbox/pi-sandbox/loop"
)

// readImage returns pi's image result: a text block naming the MIME type
// and the image itself, base64. BMP is converted to PNG (convertBMP).
func (t *readTool) readImage(ctx context.Context, r io.Reader, mime, abs string) (*loop.Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, readErr(err, abs)
	}
	if err := checkAbort(ctx); err != nil {
		return nil, err
	}
	text := "Read image file [" + mime + "]"
	if mime == "image/bmp" {
		png, err := convertBMP(data)
		if err != nil {
			return loop.TextResult(text+"\n[Image omitted: could not be converted to a supported inline image format.]", nil), nil
		}
		data, mime = png, "image/png"
		text = "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
	}
	return &loop.Result{Content: []loop.Content{
		loop.Text(text),
		loop.Image(base64.StdEncoding.EncodeToString(data), mime),
	}}, nil
}
