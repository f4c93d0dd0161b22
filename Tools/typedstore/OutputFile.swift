import CZlib
import Foundation
import Synchronization

/// Where a command writes its output: a file (`-` for stdout), gzip-compressed with the system
/// zlib when asked. A regular file is written under a temporary name beside it and renamed
/// into place by `close()` after it is flushed to disk, so a failed export or archive never
/// leaves a truncated file that looks whole. Every write error (a full disk, a file size
/// limit, a closed pipe) is a `Failure` naming the file.
final class OutputFile: Sendable {
  let displayName: String

  private struct State {
    var descriptor: Int32
    var ownsDescriptor: Bool
    /// The file being written, renamed to `finalPath` by `close()`; nil when writing in place.
    var temporaryPath: String?
    var finalPath: String
    /// Heap-allocated: zlib keeps a pointer back to its stream, so the stream may not move.
    var deflater: UnsafeMutablePointer<z_stream>?
    var output: [UInt8]
    var isClosed = false
  }

  private let state: Mutex<State>

  /// Opens `path` for writing (`-`: stdout), compressing with gzip when `gzip`.
  init(path: String, gzip: Bool) throws(Failure) {
    displayName = path == "-" ? "standard output" : path
    var descriptor: Int32 = 1
    var owns = false
    var temporary: String?
    if path != "-" {
      var info = stat()
      let exists = stat(path, &info) == 0
      if exists && (info.st_mode & S_IFMT) == S_IFDIR { throw .failed("cannot write \(path): it is a directory") }
      // Devices, pipes and the like are written in place; regular files beside, then renamed.
      let target = exists && (info.st_mode & S_IFMT) != S_IFREG ? path : "\(path).tmp-\(getpid())"
      descriptor = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
      guard descriptor >= 0 else { throw .failed("cannot write \(path): \(String(cString: strerror(errno)))") }
      owns = true
      if target != path { temporary = target }
    }
    var deflater: UnsafeMutablePointer<z_stream>?
    if gzip {
      let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
      stream.initialize(to: z_stream())
      // 15 bits of window, +16: a gzip header and trailer, as `gzip -d` reads.
      let status = deflateInit2_(
        stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
        Int32(MemoryLayout<z_stream>.size))
      guard status == Z_OK else {
        stream.deallocate()
        if owns { _ = Foundation.close(descriptor) }
        if let temporary { unlink(temporary) }
        throw .failed("cannot start gzip compression (zlib status \(status))")
      }
      deflater = stream
    }
    state = Mutex(
      State(
        descriptor: descriptor, ownsDescriptor: owns, temporaryPath: temporary, finalPath: path,
        deflater: deflater, output: [UInt8](repeating: 0, count: gzip ? 1 << 16 : 0)))
  }

  deinit {
    discard()
  }

  // MARK: - Writing

  func write(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
    try write(Data(bytes))
  }

  func write(_ data: Data) throws(Failure) {
    let name = displayName
    try state.withLock { (state) throws(Failure) in
      guard !state.isClosed else { throw .failed("cannot write \(name): it is closed") }
      var failure: Failure?
      data.withUnsafeBytes { bytes in
        do {
          if let stream = state.deflater {
            try Self.deflate(bytes, finishing: false, stream: stream, state: &state, name: name)
          } else {
            try Self.writeAll(bytes, to: state.descriptor, name: name)
          }
        } catch {
          failure = error as? Failure ?? .failed("\(error)")
        }
      }
      if let failure { throw failure }
    }
  }

  func write(_ text: String) throws(Failure) {
    try write(Data(text.utf8))
  }

  /// Finishes compression, flushes the file to disk, closes it and puts it in place.
  func close() throws(Failure) {
    let name = displayName
    try state.withLock { (state) throws(Failure) in
      guard !state.isClosed else { return }
      defer { Self.release(&state) }
      if let stream = state.deflater {
        try Self.deflate(
          UnsafeRawBufferPointer(start: nil, count: 0), finishing: true, stream: stream, state: &state, name: name)
      }
      guard state.ownsDescriptor else { return }
      var info = stat()
      if fstat(state.descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, fsync(state.descriptor) != 0 {
        throw .failed("cannot write \(name): \(String(cString: strerror(errno)))")
      }
      if Foundation.close(state.descriptor) != 0 {
        state.ownsDescriptor = false
        throw .failed("cannot write \(name): \(String(cString: strerror(errno)))")
      }
      state.ownsDescriptor = false
      if let temporary = state.temporaryPath {
        guard rename(temporary, state.finalPath) == 0 else {
          throw .failed("cannot write \(name): \(String(cString: strerror(errno)))")
        }
        state.temporaryPath = nil
      }
    }
  }

  /// Closes without putting the file in place: what was written is removed.
  func discard() {
    state.withLock { Self.release(&$0) }
  }

  private static func release(_ state: inout State) {
    if let stream = state.deflater {
      deflateEnd(stream)
      stream.deinitialize(count: 1)
      stream.deallocate()
      state.deflater = nil
    }
    if state.ownsDescriptor { _ = Foundation.close(state.descriptor) }
    state.ownsDescriptor = false
    if let temporary = state.temporaryPath { unlink(temporary) }
    state.temporaryPath = nil
    state.isClosed = true
  }

  private static func deflate(
    _ bytes: UnsafeRawBufferPointer, finishing: Bool, stream: UnsafeMutablePointer<z_stream>, state: inout State,
    name: String
  ) throws(Failure) {
    stream.pointee.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = uInt(bytes.count)
    let descriptor = state.descriptor
    let capacity = state.output.count
    while true {
      var status: Int32 = Z_OK
      var produced = 0
      state.output.withUnsafeMutableBufferPointer { output in
        stream.pointee.next_out = output.baseAddress
        stream.pointee.avail_out = uInt(capacity)
        status = CZlib.deflate(stream, finishing ? Z_FINISH : Z_NO_FLUSH)
        produced = capacity - Int(stream.pointee.avail_out)
      }
      guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
        throw .failed("cannot compress \(name) (zlib status \(status))")
      }
      if produced > 0 {
        var failure: Failure?
        state.output.withUnsafeBytes { output in
          do {
            try writeAll(UnsafeRawBufferPointer(rebasing: output[0..<produced]), to: descriptor, name: name)
          } catch {
            failure = error as? Failure ?? .failed("\(error)")
          }
        }
        if let failure { throw failure }
      }
      if finishing ? status == Z_STREAM_END : (stream.pointee.avail_in == 0 && produced < capacity) { return }
    }
  }

  private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, name: String) throws(Failure) {
    var offset = 0
    while offset < bytes.count {
      let written = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
      if written < 0 {
        if errno == EINTR { continue }
        throw .failed("cannot write \(name): \(String(cString: strerror(errno)))")
      }
      offset += written
    }
  }
}
