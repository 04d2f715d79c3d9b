//===- Driver.h - the `tbc` driver's sub-commands ---------------*- C++ -*-===//

#ifndef TBC_DRIVER_DRIVER_H
#define TBC_DRIVER_DRIVER_H

namespace tbc {

/// `tbc compile MODEL ...`; argv[0] is "tbc compile".
int compileMain(int argc, char **argv);
/// `tbc inspect PATH`: a checkpoint's tensors or a model description.
int inspectMain(int argc, char **argv);

} // namespace tbc

#endif // TBC_DRIVER_DRIVER_H
