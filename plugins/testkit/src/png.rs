//! A minimal PNG encoder for solid-colour RGB images.
//!
//! Hand-written so the testkit needs no image crates. The pixels go into *stored*
//! (uncompressed) deflate blocks: every PNG decoder accepts them and no compressor is
//! needed. The files are as big as the raw pixels, which is fine for test images.

/// The eight bytes every PNG file starts with.
const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// Largest payload of one stored deflate block: its LEN field is 16 bits.
const MAX_STORED: usize = 65_535;

/// Adler-32 modulus (largest prime below 2^16).
const ADLER_MOD: u32 = 65_521;

/// Bytes that can be summed before the Adler-32 `b` sum could overflow a `u32`
/// (the zlib `NMAX` constant), so the modulo is taken once per run, not per byte.
const ADLER_NMAX: usize = 5_552;

/// CRC-32 (IEEE, reflected, polynomial 0xEDB88320) lookup table, built at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

/// Encodes a `width` x `height` image filled with `rgb` as a PNG (8-bit RGB, not interlaced).
///
/// Both sizes must be at least 1; the caller bounds them so the file stays under 4 GiB.
pub fn solid_rgb(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    // Every scanline is the same: filter type 0 ("none") followed by the pixels. The
    // raw image is that row repeated, streamed rather than materialised, so a large
    // image costs one copy of memory (the output) instead of two.
    let mut row = Vec::with_capacity(1 + width as usize * 3);
    row.push(0);
    for _ in 0..width {
        row.extend_from_slice(&rgb);
    }
    let raw_len = row.len() * height as usize;
    let raw = row.iter().copied().cycle().take(raw_len);

    let mut ihdr = [0u8; 13];
    ihdr[0..4].copy_from_slice(&width.to_be_bytes());
    ihdr[4..8].copy_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace.
    ihdr[8..].copy_from_slice(&[8, 2, 0, 0, 0]);

    let blocks = raw_len / MAX_STORED + 1;
    let mut png = Vec::with_capacity(raw_len + blocks * 5 + 64);
    png.extend_from_slice(&SIGNATURE);
    chunk(&mut png, b"IHDR", |out| out.extend_from_slice(&ihdr));
    chunk(&mut png, b"IDAT", |out| zlib_stored(out, raw, raw_len));
    chunk(&mut png, b"IEND", |_| {});
    png
}

/// Appends one chunk: big-endian length, type, the data `write` appends, then the
/// CRC-32 of type and data. Writing in place avoids copying the (large) IDAT data.
fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], write: impl FnOnce(&mut Vec<u8>)) {
    let start = png.len();
    png.extend_from_slice(&[0; 4]); // length, patched once the data is written
    png.extend_from_slice(kind);
    write(png);
    let len = u32::try_from(png.len() - start - 8).expect("PNG chunk larger than 4 GiB");
    png[start..start + 4].copy_from_slice(&len.to_be_bytes());
    let crc = crc32(&png[start + 4..]);
    png.extend_from_slice(&crc.to_be_bytes());
}

/// Appends `data` (exactly `len` bytes) as a zlib stream of stored deflate blocks.
fn zlib_stored(out: &mut Vec<u8>, mut data: impl Iterator<Item = u8>, len: usize) {
    // CMF 0x78 = deflate with a 32 KiB window; FLG 0x01 makes CMF*256+FLG divisible by 31.
    out.extend_from_slice(&[0x78, 0x01]);
    let (mut a, mut b) = (1u32, 0u32);
    let mut left = len;
    loop {
        let n = left.min(MAX_STORED);
        left -= n;
        let last = left == 0;
        // Block header: BFINAL in bit 0, BTYPE 00 (stored); then LEN and its complement.
        out.push(u8::from(last));
        let n16 = n as u16; // n <= MAX_STORED, so this never truncates
        out.extend_from_slice(&n16.to_le_bytes());
        out.extend_from_slice(&(!n16).to_le_bytes());
        let start = out.len();
        out.extend(data.by_ref().take(n));
        for run in out[start..].chunks(ADLER_NMAX) {
            for &byte in run {
                a += u32::from(byte);
                b += a;
            }
            a %= ADLER_MOD;
            b %= ADLER_MOD;
        }
        if last {
            break;
        }
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
}

/// CRC-32 as PNG chunks use it.
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &byte| {
        CRC_TABLE[((c ^ u32::from(byte)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a PNG into its chunks, checking the signature and every CRC.
    fn chunks(png: &[u8]) -> Vec<([u8; 4], &[u8])> {
        assert_eq!(png[..8], SIGNATURE);
        let mut rest = &png[8..];
        let mut out = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = rest[4..8].try_into().unwrap();
            let crc = u32::from_be_bytes(rest[8 + len..12 + len].try_into().unwrap());
            assert_eq!(crc, crc32(&rest[4..8 + len]), "CRC of {:?}", kind);
            out.push((kind, &rest[8..8 + len]));
            rest = &rest[12 + len..];
        }
        out
    }

    /// Inflates a zlib stream made only of stored blocks, checking header and Adler-32.
    fn inflate_stored(z: &[u8]) -> Vec<u8> {
        assert_eq!((u16::from(z[0]) << 8 | u16::from(z[1])) % 31, 0);
        let (mut pos, mut out) = (2, Vec::new());
        loop {
            let header = z[pos];
            assert_eq!(header & 0b110, 0, "not a stored block");
            let len = u16::from_le_bytes([z[pos + 1], z[pos + 2]]);
            let nlen = u16::from_le_bytes([z[pos + 3], z[pos + 4]]);
            assert_eq!(len, !nlen);
            out.extend_from_slice(&z[pos + 5..pos + 5 + len as usize]);
            pos += 5 + len as usize;
            if header & 1 == 1 {
                break;
            }
        }
        let (a, b) = out.iter().fold((1u32, 0u32), |(a, b), &x| {
            let a = (a + u32::from(x)) % ADLER_MOD;
            (a, (b + a) % ADLER_MOD)
        });
        assert_eq!(z[pos..], ((b << 16) | a).to_be_bytes());
        out
    }

    #[test]
    fn crc32_matches_the_reference_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn solid_image_round_trips() {
        // 200 x 120 RGB is 72,120 raw bytes: more than one stored block.
        let (w, h, rgb) = (200u32, 120u32, [10, 20, 30]);
        let png = solid_rgb(w, h, rgb);
        let chunks = chunks(&png);
        let kinds: Vec<&[u8; 4]> = chunks.iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, [b"IHDR", b"IDAT", b"IEND"]);
        let ihdr = chunks[0].1;
        assert_eq!(ihdr[..8], [&w.to_be_bytes()[..], &h.to_be_bytes()].concat());
        assert_eq!(ihdr[8..], [8, 2, 0, 0, 0]);
        let raw = inflate_stored(chunks[1].1);
        assert_eq!(raw.len(), (1 + 3 * w as usize) * h as usize);
        for row in raw.chunks(1 + 3 * w as usize) {
            assert_eq!(row[0], 0);
            assert!(row[1..].chunks(3).all(|px| px == rgb));
        }
    }

    #[test]
    fn one_pixel_image_is_valid() {
        let png = solid_rgb(1, 1, [255, 0, 0]);
        assert_eq!(inflate_stored(chunks(&png)[1].1), [0, 255, 0, 0]);
    }
}
