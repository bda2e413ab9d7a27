package tools

import (
	"bytes"
	"encoding/binary"
)

// imageSniffLen is how much of a file read looks at to recognise an image
// (pi's MIME sniff window).
const imageSniffLen = 4100

// detectImage returns the MIME type of the supported image formats (JPEG,
// PNG, GIF, WebP, BMP) by their magic bytes, or "" for anything else. Like
// pi (file-type), animated PNG and JPEG-LS are not images here.
func detectImage(b []byte) string {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		if len(b) >= 4 && b[3] == 0xF7 {
			return "" // JPEG-LS
		}
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		if isPlainPNG(b) {
			return "image/png"
		}
		return ""
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return "image/webp"
	case isBMP(b):
		return "image/bmp"
	}
	return ""
}

// isPlainPNG checks for the IHDR chunk and walks the chunks in the sniff
// window: an acTL chunk before the first IDAT marks an APNG.
func isPlainPNG(b []byte) bool {
	if len(b) < 16 || string(b[12:16]) != "IHDR" {
		return false
	}
	for off := 8; off+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		switch string(b[off+4 : off+8]) {
		case "acTL":
			return false
		case "IDAT", "IEND":
			return true
		}
		if n < 0 || n > len(b) {
			break
		}
		off += 12 + n
	}
	return true
}

// isBMP checks "BM" and a known DIB header size, so a text file that starts
// with "BM" stays text.
func isBMP(b []byte) bool {
	if len(b) < 26 || b[0] != 'B' || b[1] != 'M' {
		return false
	}
	switch binary.LittleEndian.Uint32(b[14:]) {
	case 12, 40, 52, 56, 64, 108, 124:
		return true
	}
	return false
}
