// Package imageio decodes image files (PNG, JPEG, WebP, binary PGM, PPM
// and PAM) into zenmetrics.Image and writes images back as PNG.
//
// # Formats
//
// The format is found from the file's first bytes, never from its name.
//
//   - PNG, every colour type and bit depth, kept in the file's own channel
//     layout: gray stays gray, 16-bit stays 16-bit (big-endian), alpha stays
//     straight (non-premultiplied) exactly as stored. Details below.
//   - JPEG through this module's libjpeg-turbo-exact decoder
//     (imageio/internal/jpegturbo): baseline and progressive, Huffman and
//     arithmetic coding, every integral sampling. Gray files become Gray8,
//     YCbCr and RGB files RGB8, with exactly the samples libjpeg-turbo 2.1's
//     default decompression (djpeg, and libjxl's tools) produces. CMYK and
//     YCCK files are refused with an error wrapping zenmetrics.ErrUnsupported
//     (converting them needs a colour profile; libjxl's tools refuse them
//     too), as are 12-bit, lossless and hierarchical files. Corrupt or
//     truncated files, including one without EOI, are refused with
//     zenmetrics.ErrBadInput where libjpeg would warn and fill in blocks.
//   - WebP (lossy, lossy with alpha, lossless) through golang.org/x/image/webp
//     for the bitstream. Lossy files are converted from Y'CbCr to RGB here,
//     with libwebp's fixed-point BT.601 arithmetic and its "fancy" chroma
//     upsampling, so they match what libwebp's dwebp writes (x/image's own
//     image.YCbCr would be converted with the JPEG full-range matrix, which
//     is wrong for WebP and washes colours out). A file that declares alpha
//     becomes RGBA8, any other RGB8. Animated WebP is refused
//     (ErrUnsupported).
//   - Binary Netpbm (pnm.go): PGM (P5) becomes Gray8 or Gray16, PPM (P6)
//     RGB8 or RGB16, PAM (P7) with TUPLTYPE GRAYSCALE, GRAYSCALE_ALPHA, RGB
//     or RGB_ALPHA the matching format, 16-bit when maxval > 255. Samples
//     with maxval 255 or 65535 are kept exactly as stored (the raster is
//     already this package's layout: a file decodes at memory-copy speed,
//     and DecodeFile keeps its read buffer as the pixels without copying);
//     maxval 1, 3 and 15 are scaled to 8 bits exactly (×255, ×85, ×17, as
//     libjxl reads them as 1-, 2- and 4-bit values). Every other maxval is
//     refused with ErrUnsupported: libjxl accepts 2^n − 1 only, and for
//     other n (10- and 12-bit files among them) the samples would have to
//     be rounded to fit 8 or 16 bits. Plain (ASCII) formats, PBM, PFM
//     (zenmetrics.Image has no float format), other PAM tuple types and
//     headers over 4 KiB are refused with ErrUnsupported; a file whose
//     size is not exactly its header plus its raster (truncated, a second
//     image, stray whitespace after maxval) with ErrBadInput.
//
// Colour metadata (PNG iCCP, gAMA, cHRM, sRGB chunks; WebP ICCP; JPEG ICC
// APP2) is ignored: samples are taken to be sRGB, as the metrics expect
// (and as libjxl takes PNM samples, which Netpbm defines as BT.709).
//
// # PNG layouts
//
//	colour type            bit depth   no tRNS   with tRNS
//	gray                   1,2,4,8     Gray8     GrayA8
//	gray                   16          Gray16    GrayA16
//	RGB                    8           RGB8      RGBA8
//	RGB                    16          RGB16     RGBA16
//	palette                1,2,4,8     RGB8      RGBA8
//	gray+alpha             8 / 16      GrayA8 / GrayA16
//	RGBA                   8 / 16      RGBA8 / RGBA16
//
// Gray samples of 1, 2 or 4 bits are scaled to 0..255 by bit replication as
// libpng's expansion does (1-bit 1 → 255, 2-bit 1 → 85, 4-bit 1 → 17). A
// tRNS chunk becomes an alpha channel that is 0 where the sample equals the
// tRNS value and full elsewhere (palette: the tRNS alpha of each entry,
// full for entries past its end). Palette indices past the end of PLTE read
// as opaque black, as libpng does. Interlaced files are supported.
//
// PNG files are decoded by this package's own decoder (pngdecode.go), about
// 2.5-3× faster per core than image/png on large photos: it inflates the
// whole stream into one buffer, unfilters with loops specialised per filter
// and pixel size, and writes rows straight into the layout above (an RGB
// file's rows are unfiltered in the image's own buffer). It gives exactly
// image/png's samples and accepts and refuses what image/png does (chunk
// order, CRCs, zlib checks), with one difference: bytes after the end of
// the zlib stream inside the IDAT chunks are ignored, where image/png
// refuses them or not depending on its read buffering.
//
// # JPEG metadata
//
// An embedded ICC profile (APP2) is ignored like PNG iCCP: samples are
// taken to be sRGB. libjxl's tools colour-manage a non-sRGB profile, so
// scores of such files can differ from theirs. EXIF orientation (APP1) is
// not applied; libjxl's ssimulacra2 and butteraugli_main do not apply it
// either when they read a JPEG.
//
// # Limits and errors
//
// DecodeFile and ProbeFile open regular files only: a directory, device
// (/dev/zero), FIFO or socket is refused at once, and a FIFO is never
// waited on. The format and header are read from the first bytes; the
// pixel count is checked against Options.MaxPixels, and the file size
// against the most any image of the declared size can take, before the
// rest of the file is read. Before a decoder allocates the image, the
// compressed data must be able to hold it: a PNG's IDAT bytes at least
// 1/1032 of its samples (deflate's largest ratio), a lossy WebP's VP8 data
// one bit per macroblock, a PNM file exactly its raster; so allocation
// follows the data present, not the header's claim alone. ProbeFile reports an image's size and an upper
// bound of its decode memory without decoding it, for callers that compare
// sizes or budget memory first. Error messages never quote a file's bytes. Every error from
// Decode, DecodeFile and DecodeFileOptions is a *zenmetrics.InputError
// naming the file, wrapping zenmetrics.ErrBadInput (corrupt, truncated,
// unknown, too large) or zenmetrics.ErrUnsupported (a valid file using a
// feature not supported here); the decoder's own message is kept. A panic
// inside a decoder is recovered into such an error.
package imageio
