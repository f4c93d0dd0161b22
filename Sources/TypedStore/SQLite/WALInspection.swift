import Foundation
import Synchronization

/// What a store's write-ahead log holds, compared with what SQLite will replay from it.
///
/// SQLite replays a WAL frame by frame and stops at the first frame whose salt or checksum
/// does not match (see "The WAL File Format" on sqlite.org): everything from there on is
/// ignored, and the next write overwrites it. After a crash that is right: the last frames of
/// a transaction that never finished are torn, and dropping them loses nothing that was
/// committed. But when a header or a frame in the middle is damaged (disk damage, a bad copy),
/// commits that come after it are dropped too, silently. This type tells the two apart.
///
/// ```swift
/// if let wal = try WALInspection(path: url.path + "-wal"), wal.isDamaged { print(wal) }
/// ```
public struct WALInspection: Sendable, Equatable, CustomStringConvertible {
  /// Whether the 32-byte header is intact (magic, version, page size, checksum).
  public var headerIsValid: Bool
  /// Whole frames in the file.
  public var frameCount: Int
  /// Frames SQLite replays: up to the last commit frame before the first invalid frame.
  public var replayedFrames: Int
  /// Commits SQLite replays.
  public var replayedCommits: Int
  /// Commit frames of the log's current generation (same salt) that come after the first
  /// invalid frame, so that SQLite will not replay them: transactions that committed and
  /// would be lost.
  public var lostCommits: Int
  /// The number (1-based) of the first frame SQLite does not accept, if any.
  public var firstInvalidFrame: Int?

  /// True when committed transactions in the file would not be replayed: the header is
  /// damaged while frames follow it that end a transaction, or a commit follows a damaged
  /// frame. A torn last frame (a transaction that never committed) is not damage.
  public var isDamaged: Bool { lostCommits > 0 }

  /// What the log holds and what SQLite replays of it, in a sentence.
  public var description: String {
    if !headerIsValid {
      return "the WAL header is damaged, so SQLite replays none of its \(frameCount) frames, "
        + "which hold \(lostCommits) committed transaction(s)"
    }
    guard let first = firstInvalidFrame else {
      return "\(frameCount) frames, \(replayedCommits) committed transaction(s), all replayed"
    }
    return "frame \(first) of \(frameCount) is damaged, so SQLite replays \(replayedCommits) committed "
      + "transaction(s) (\(replayedFrames) frames) and drops \(lostCommits) committed transaction(s) after it"
  }

  private init(
    headerIsValid: Bool, frameCount: Int, replayedFrames: Int, replayedCommits: Int, lostCommits: Int,
    firstInvalidFrame: Int?
  ) {
    self.headerIsValid = headerIsValid
    self.frameCount = frameCount
    self.replayedFrames = replayedFrames
    self.replayedCommits = replayedCommits
    self.lostCommits = lostCommits
    self.firstInvalidFrame = firstInvalidFrame
  }

  static let headerSize = 32
  static let frameHeaderSize = 24

  /// What a WAL index published: `mxFrame`, and the salt of the log generation it describes.
  struct Published: Sendable, Equatable {
    var frames: Int
    var salt: Data
  }

  /// The salt of the log at `walPath` (its generation), or nil.
  static func salt(walPath: String) -> Data? {
    if case .salt(let salt) = logBefore(walPath: walPath) { return salt }
    return nil
  }

  /// The frames SQLite's WAL index (the `-shm` file) says are committed and published (its
  /// `mxFrame`), with the salt of the log at `walPath`; nil when either file cannot be read,
  /// the index's two header copies differ, its version is not 3007000, it is not initialized
  /// (`isInit`), or the salt it records is not the log's (it describes another generation).
  ///
  /// SQLite writes a transaction's frames, then publishes them by raising `mxFrame` in the
  /// index; readers and the next writer use the index, and the next writer overwrites from
  /// `mxFrame + 1`. A writer killed between the two leaves frames that were never
  /// acknowledged, and a later, shorter transaction can overwrite the start of them: an
  /// invalid frame, then an old commit frame, past `mxFrame`. That is no loss. Call it before
  /// opening the store: a connection's first read may rebuild the index from the log
  /// (recovery, which stops at damage), after which it no longer says what was published.
  static func publishedFrames(walPath: String, shmPath: String) -> Published? {
    // The index header's two copies differ while a writer publishes: read again, as SQLite does.
    var index = IndexFiles.read(shmPath, count: 96)
    for _ in 0..<3 where index.map({ $0.prefix(48) != $0.suffix(48) }) ?? false {
      sched_yield()
      index = IndexFiles.read(shmPath, count: 96)
    }
    guard let index, index.count == 96, let wal = FileHandle(forReadingAtPath: walPath) else { return nil }
    defer { try? wal.close() }
    guard let walHeader = try? wal.read(upToCount: headerSize), walHeader.count == headerSize else { return nil }
    let first = index.prefix(48)
    let second = index.suffix(48)
    func nativeWord(_ data: Data, _ offset: Int) -> UInt32 {
      data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
    }
    guard first.elementsEqual(second), nativeWord(Data(first), 0) == 3_007_000, first[first.startIndex + 12] == 1,
      indexHeaderChecksumIsValid(Data(first)), Data(first).subdata(in: 32..<40) == walHeader.subdata(in: 16..<24)
    else { return nil }
    return Published(frames: Int(nativeWord(Data(first), 16)), salt: walHeader.subdata(in: 16..<24))
  }

  /// Whether a WAL index header (48 bytes) holds the checksum of its first 40 bytes in its
  /// last 8, as SQLite writes it (native byte order): SQLite rebuilds an index whose header
  /// fails this, so its `mxFrame` says nothing.
  static func indexHeaderChecksumIsValid(_ header: Data) -> Bool {
    guard header.count >= 48 else { return false }
    return header.withUnsafeBytes { bytes -> Bool in
      func word(_ offset: Int) -> UInt32 { bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
      var (s1, s2): (UInt32, UInt32) = (0, 0)
      for offset in stride(from: 0, to: 40, by: 8) {
        s1 = s1 &+ word(offset) &+ s2
        s2 = s2 &+ word(offset + 4) &+ s1
      }
      return s1 == word(40) && s2 == word(44)
    }
  }

  /// The salt of the store at `path`'s log (nil when it has no header) and what its index says
  /// was published, read in that order, before an open.
  ///
  /// An index without a valid header is being rebuilt (the first connection to attach to a log
  /// no one has open truncates the `-shm` and recovers it from the log) or was torn by a writer
  /// killed while publishing: another connection settles it within milliseconds, so it is read
  /// again, every millisecond up to 250 ms (and `limit`). Without a reading, damage past the
  /// published frames (a killed writer's unpublished frames, which SQLite never replays)
  /// could not be told from damage to committed ones, and a sound store would be refused. The
  /// reading waited for is one an open begun a moment later would have taken: it hides no
  /// damage that such an open would see.
  static func before(
    path: String, limit: ContinuousClock.Instant, settling: Duration = .milliseconds(250)
  ) -> (log: LogBefore, published: Published?) {
    let wal = path + "-wal"
    let shm = path + "-shm"
    let log = logBefore(walPath: wal)
    var published = publishedFrames(walPath: wal, shmPath: shm)
    let end = min(limit, .now + settling)
    while published == nil, case .salt = log, indexIsUnsettled(shmPath: shm), ContinuousClock.now < end {
      usleep(1000)
      published = publishedFrames(walPath: wal, shmPath: shm)
    }
    return (log, published)
  }

  /// Whether the WAL index at `shmPath` exists without a header SQLite would trust: shorter
  /// than one, its two copies different, not initialized, or failing its checksum.
  static func indexIsUnsettled(shmPath: String) -> Bool {
    guard FileManager.default.fileExists(atPath: shmPath) else { return false }
    guard let index = IndexFiles.read(shmPath, count: 96), index.count == 96 else { return true }
    let first = Data(index.prefix(48))
    return first != Data(index.suffix(48)) || first[12] != 1 || !indexHeaderChecksumIsValid(first)
  }

  /// What the log was before an open: absent or without a whole header, of a generation
  /// (its salt), or unknown (the file could not be read).
  enum LogBefore: Equatable {
    case noHeader
    case salt(Data)
    case unknown
  }

  static func logBefore(walPath: String) -> LogBefore {
    guard FileManager.default.fileExists(atPath: walPath) else { return .noHeader }
    guard let wal = FileHandle(forReadingAtPath: walPath) else { return .unknown }
    defer { try? wal.close() }
    guard let header = try? wal.read(upToCount: headerSize) else { return .unknown }
    return header.count == headerSize ? .salt(header.subdata(in: 16..<24)) : .noHeader
  }

  /// The index reading that says which frames of the log whose salt is `walSalt` (read under
  /// the write lock) were published: the one taken `before` the open when it is of this log;
  /// when the log is known to have had another salt, or no header, before the open
  /// (`logBefore`), one taken `now`, if it is of this log; nil otherwise.
  ///
  /// A log whose header was written during the open was begun during it: its writers append
  /// after the published frames and continue the checksum chain, so, short of the disk
  /// failing meanwhile, only a killed writer's frames can be invalid in it, and its index (as
  /// published, or rebuilt by recovery, which stops at the first invalid frame) says where the
  /// acknowledged commits end. An index rebuilt from a log damaged before the open has that
  /// log's salt, and is never asked.
  static func publishedReading(
    before: Published?, logBefore: LogBefore, now: () -> Published?, walSalt: Data?
  ) -> Published? {
    guard let walSalt else { return nil }
    if let before, before.salt == walSalt { return before }
    guard logBefore != .unknown, logBefore != .salt(walSalt), let current = now(), current.salt == walSalt else {
      return nil
    }
    return current
  }

  /// Whether the log at `walPath` was begun during an open (its salt now is known to differ
  /// from the one before it, or it had no header then): only a writer killed during the open
  /// can have left invalid frames in it, short of the disk failing.
  static func wasBegunDuring(_ logBefore: LogBefore, walPath: String) -> Bool {
    guard logBefore != .unknown, let now = salt(walPath: walPath) else { return false }
    return logBefore != .salt(now)
  }

  /// Reads the WAL at `path`; nil when there is no such file or it holds no frame.
  ///
  /// The file is read with a descriptor of its own: SQLite keeps no lock on a `-wal` file
  /// (only on the database and `-shm` files), so closing it cannot release SQLite's locks.
  public init?(path: String) throws {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    let header = try handle.read(upToCount: Self.headerSize) ?? Data()
    guard header.count == Self.headerSize else { return nil }
    let magic = header.bigEndianWord(at: 0)
    let pageSize = Int(header.bigEndianWord(at: 8))
    let bigEndian = magic & 1 == 1
    let validPageSize = pageSize >= 512 && pageSize <= 65536 && pageSize & (pageSize - 1) == 0
    var checksum = WALChecksum(bigEndian: bigEndian)
    checksum.add(header.prefix(24))
    let headerIsValid =
      (magic & 0xFFFF_FFFE) == 0x377F_0682 && header.bigEndianWord(at: 4) == 3_007_000 && validPageSize
      && checksum.values == (header.bigEndianWord(at: 24), header.bigEndianWord(at: 28))
    // A damaged header may still say the page size; SQLite's frames are page size + 24.
    let frameSize = (validPageSize ? pageSize : 4096) + Self.frameHeaderSize
    let salt = header.subdata(in: 16..<24)

    var inspection = WALInspection(
      headerIsValid: headerIsValid, frameCount: 0, replayedFrames: 0, replayedCommits: 0, lostCommits: 0,
      firstInvalidFrame: nil)
    var frameSalt: Data? = headerIsValid ? salt : nil
    var invalidAt: Int?
    var lostAfterInvalid = 0
    var laterSameGeneration = 0
    var frameNumber = 0
    let framesPerRead = max(1, (1 << 20) / frameSize)
    while true {
      let chunk = try handle.read(upToCount: frameSize * framesPerRead) ?? Data()
      var offset = 0
      while offset + frameSize <= chunk.count {
        frameNumber += 1
        let frame = chunk.subdata(in: offset..<(offset + frameSize))
        offset += frameSize
        let isCommit = frame.bigEndianWord(at: 4) != 0
        // With a damaged header, the first frame's salt stands for the log's generation.
        if frameSalt == nil { frameSalt = frame.subdata(in: 8..<16) }
        let sameGeneration = frame.subdata(in: 8..<16) == frameSalt
        if invalidAt == nil && headerIsValid {
          var next = checksum
          next.add(frame.prefix(8))
          next.add(frame.suffix(from: Self.frameHeaderSize))
          let valid =
            sameGeneration && frame.bigEndianWord(at: 0) != 0
            && next.values == (frame.bigEndianWord(at: 16), frame.bigEndianWord(at: 20))
          if valid {
            checksum = next
            if isCommit {
              inspection.replayedFrames = frameNumber
              inspection.replayedCommits += 1
            }
            continue
          }
          invalidAt = frameNumber
        } else if invalidAt == nil {
          invalidAt = frameNumber
        } else if sameGeneration {
          laterSameGeneration += 1
        }
        if sameGeneration && isCommit { lostAfterInvalid += 1 }
      }
      if chunk.count < frameSize * framesPerRead { break }
    }
    inspection.frameCount = frameNumber
    inspection.firstInvalidFrame = invalidAt
    guard frameNumber > 0 else { return nil }
    // An invalid frame with nothing of its generation after it is a torn end: the
    // transaction it belonged to never finished writing, so it never committed. (Frames of an
    // older generation after it are leftovers of a log SQLite restarted: not its to replay.)
    inspection.lostCommits = headerIsValid && laterSameGeneration == 0 ? 0 : lostAfterInvalid
    self = inspection
  }
}

/// SQLite's WAL checksum: two 32-bit sums over 32-bit words, in the byte order the WAL
/// header's magic number names.
struct WALChecksum {
  let bigEndian: Bool
  private(set) var first: UInt32 = 0
  private(set) var second: UInt32 = 0

  init(bigEndian: Bool) { self.bigEndian = bigEndian }

  var values: (UInt32, UInt32) { (first, second) }

  mutating func add(_ bytes: Data) {
    bytes.withUnsafeBytes { buffer in
      var index = 0
      var s1 = first
      var s2 = second
      while index + 8 <= buffer.count {
        let a = buffer.loadUnaligned(fromByteOffset: index, as: UInt32.self)
        let b = buffer.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self)
        let x0 = bigEndian ? UInt32(bigEndian: a) : UInt32(littleEndian: a)
        let x1 = bigEndian ? UInt32(bigEndian: b) : UInt32(littleEndian: b)
        s1 = s1 &+ x0 &+ s2
        s2 = s2 &+ x1 &+ s1
        index += 8
      }
      first = s1
      second = s2
    }
  }
}

extension Data {
  /// The big-endian 32-bit word at `offset` from the start.
  fileprivate func bigEndianWord(at offset: Int) -> UInt32 {
    let start = startIndex + offset
    return self[start..<(start + 4)].reduce(0) { $0 << 8 | UInt32($1) }
  }
}

/// The `-shm` files this process reads itself, each through one descriptor kept open. SQLite
/// takes its WAL locks (the write lock, read marks, "in use") with `fcntl` on the `-shm`, and
/// POSIX releases every lock a process holds on a file when the process closes any descriptor
/// of it: opening and closing the file around each reading would release the locks of this
/// process's own connections to the store. A descriptor is closed only once its file is
/// deleted and no other descriptor of this process refers to it (SQLite no longer uses it
/// here), so files do not pile up for a process that opens stores again and again.
/// (Mutex-only state: Tools/tsan-suppressions.txt names the type.)
enum IndexFiles {
  private struct FileID: Hashable {
    var device: UInt
    var inode: UInt
  }

  /// By file, the descriptors this process opened of it: one, but for a file that replaced
  /// another between a `stat` and an `open`, which keeps both (closing either would release
  /// the locks).
  private static let descriptors = Mutex<[FileID: [Int32]]>([:])

  /// The first `count` bytes of the regular file at `path` (a `-shm`), or nil.
  static func read(_ path: String, count: Int) -> Data? {
    descriptors.withLock { descriptors -> Data? in
      forgetUnused(&descriptors)
      var info = stat()
      guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
      var descriptor = descriptors[FileID(device: UInt(info.st_dev), inode: UInt(info.st_ino))]?.first
      if descriptor == nil {
        let opened = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard opened >= 0 else { return nil }
        var openedInfo = stat()
        guard fstat(opened, &openedInfo) == 0 else { return nil }  // kept open: it may be locked
        descriptors[FileID(device: UInt(openedInfo.st_dev), inode: UInt(openedInfo.st_ino)), default: []].append(opened)
        descriptor = opened
      }
      guard let descriptor else { return nil }
      var bytes = [UInt8](repeating: 0, count: count)
      let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, 0) }
      return read == count ? Data(bytes) : nil
    }
  }

  /// Closes the descriptors of deleted files that no other descriptor of this process refers
  /// to: closing them releases no lock SQLite holds here. Without `/proc/self/fd`, none.
  private static func forgetUnused(_ descriptors: inout [FileID: [Int32]]) {
    let deleted = descriptors.filter { _, ours in
      var info = stat()
      return ours.first.map { fstat($0, &info) == 0 && info.st_nlink == 0 } ?? false
    }
    guard !deleted.isEmpty,
      let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    else { return }
    var others: [FileID: Int] = [:]
    for name in names {
      guard let descriptor = Int32(name) else { continue }
      var info = stat()
      guard fstat(descriptor, &info) == 0 else { continue }
      others[FileID(device: UInt(info.st_dev), inode: UInt(info.st_ino)), default: 0] += 1
    }
    for (id, ours) in deleted where others[id, default: 0] <= ours.count {  // ours alone
      for descriptor in ours { close(descriptor) }
      descriptors[id] = nil
    }
  }
}
