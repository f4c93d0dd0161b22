import Foundation

extension Statement {
  /// Binds `value` to parameter `index` (from 1), with the storage class it names.
  func bind(_ value: PrimitiveValue, at index: Int32) {
    switch value {
    case .null: bindNull(index)
    case .integer(let int): bind(int, at: index)
    case .real(let real): bind(real, at: index)
    case .text(let text): bind(text, at: index)
    case .blob(let data): bind(data, at: index)
    }
  }
}
