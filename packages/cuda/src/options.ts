/** Options every entry point of @allot/cuda accepts: where the CUDA libraries are. */
export interface CudaLibraryOptions {
  /**
   * Path of the CUDA runtime library (`libcudart.so.<major>`). When absent: `ALLOT_CUDART_PATH`,
   * then `CUDA_HOME`/`CUDA_PATH`, `/usr/local/cuda*`, and the dynamic loader's path.
   * @defaultValue discovered
   */
  readonly runtimePath?: string;
  /**
   * Path of the CUDA driver library (`libcuda.so.1`), used for the virtual-memory API of
   * expandable segments. When absent: `ALLOT_CUDA_DRIVER_PATH`, then the dynamic loader's path.
   * @defaultValue discovered
   */
  readonly driverPath?: string;
  /** Environment read during discovery. @defaultValue process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Options of the entry points that work on one device. */
export interface DeviceOptions extends CudaLibraryOptions {
  /** Device ordinal. @defaultValue 0 */
  readonly device?: number;
}
