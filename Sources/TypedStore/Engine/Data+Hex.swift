import Foundation

extension Data {
  /// The bytes as lowercase hex digits, two per byte.
  ///
  /// ```swift
  /// Data([0, 255]).hexDigits  // "00ff"
  /// ```
  package var hexDigits: String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(count * 2)
    for byte in self {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// Bytes from hex digits, either case. Nil for any other character or an odd count of
  /// digits, unless `skippingOthers`: then other characters are passed over, and a last
  /// digit alone is dropped.
  ///
  /// ```swift
  /// Data(hexDigits: "00FF")  // [0, 255]
  /// ```
  package init?(hexDigits hex: some StringProtocol, skippingOthers: Bool = false) {
    var bytes: [UInt8] = []
    var high: UInt8?
    for character in hex.utf8 {
      let nibble: UInt8
      switch character {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
      case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
      case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
      default:
        if skippingOthers { continue }
        return nil
      }
      if let value = high {
        bytes.append(value << 4 | nibble)
        high = nil
      } else {
        high = nibble
      }
    }
    guard high == nil || skippingOthers else { return nil }
    self.init(bytes)
  }
}
