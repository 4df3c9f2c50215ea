/**
 * Types for tweetnacl-sealedbox-js@1.2.0 (ships none): libsodium-compatible sealed boxes over
 * tweetnacl's X25519 box. The package is CommonJS, so it is imported as a default export.
 *
 *   import sealedBox from 'tweetnacl-sealedbox-js';
 *   const ct = sealedBox.seal(message, recipientPublicKey);
 *   const pt = sealedBox.open(ct, recipientPublicKey, recipientSecretKey); // null when it fails
 */
declare module 'tweetnacl-sealedbox-js' {
  interface SealedBox {
    /** Bytes a sealed box adds to its message: an ephemeral public key and the box's MAC. */
    readonly overheadLength: number;
    seal(message: Uint8Array, publicKey: Uint8Array): Uint8Array;
    /** null when the box was not sealed to this key pair or was altered. */
    open(ciphertext: Uint8Array, publicKey: Uint8Array, secretKey: Uint8Array): Uint8Array | null;
  }
  const sealedBox: SealedBox;
  export default sealedBox;
}
