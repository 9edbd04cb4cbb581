@_exported import BatonJSON
