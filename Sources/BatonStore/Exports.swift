@_exported import BatonJSON
@_exported import BatonTime
