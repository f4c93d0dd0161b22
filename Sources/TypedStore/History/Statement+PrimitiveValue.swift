import Foundation

// Binding and reading `PrimitiveValue`s: where the Model's values meet SQLite's storage classes.
// It lives in History, the lowest layer that uses both SQLite and the Model.
extension Statement {
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

extension ColumnValue {
  /// The value as a `PrimitiveValue`.
  var primitiveValue: PrimitiveValue {
    switch storageClass {
    case .integer: .integer(int64)
    case .real: .real(double)
    case .text: .text(string)
    case .blob: .blob(data)
    case .null: .null
    }
  }
}
