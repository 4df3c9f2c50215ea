/**
 * Path help of the KV engine (`?help=1` on a path under a KV mount), in the words of Vault's KV
 * plugin (builtin/logical/kv: path_data.go, path_metadata.go, path_config.go, path_delete.go,
 * path_destroy.go, passthrough.go). Patterns are mount-relative.
 *
 *   kvHelp(2, 'data/app/db').pattern === 'data/*path'
 *   kvHelp(2, 'nonsense').synopsis   // the engine's overview and its paths, as Vault's invalid-path help
 */
import type { HelpField, PathHelp } from '../logical.js';

const location: HelpField = { name: 'path', type: 'string', description: 'Location of the secret.', in: 'path', required: true };
const versions = (what: string): HelpField => ({ name: 'versions', type: 'slice', description: what, in: 'body', required: true });
const body = (name: string, type: string, description: string): HelpField => ({ name, type, description, in: 'body', required: false });

const MAX_VERSIONS = 'The number of versions to keep for each key. Defaults to 10; 0 keeps the default.';
const CAS_REQUIRED = 'If true, every write must set the cas parameter (check-and-set).';
const DELETE_AFTER = 'How long a version is kept before it is deleted, as a duration ("30m", "24h"); 0 never deletes.';

const V2_OVERVIEW =
  'This engine provides a versioned key-value store. It reads and writes arbitrary secrets, encrypted by ' +
  "the node's barrier before they reach storage. Each key keeps a configured number of versions, and a " +
  'version can be read, deleted, undeleted or destroyed by its number.';

const V2: readonly PathHelp[] = [
  {
    pattern: 'config',
    synopsis: 'Configures settings for the KV store.',
    operations: { read: 'Read the backend level settings.', update: 'Configure backend level settings that are applied to every key in the key-value store.' },
    fields: [body('max_versions', 'int', MAX_VERSIONS), body('cas_required', 'bool', CAS_REQUIRED), body('delete_version_after', 'duration (sec)', DELETE_AFTER)],
    description: 'This path configures backend level settings that are applied to every key in the key-value store.',
  },
  {
    pattern: 'data/*path',
    synopsis: 'Write, Patch, Read, and Delete data in the Key-Value Store.',
    operations: {
      read: 'Read the latest version of a secret, or the version given by version.',
      update: 'Write a new version of a secret.',
      patch: 'Patch the latest version of a secret (JSON merge patch).',
      delete: 'Delete the latest version of a secret; it can be undeleted.',
    },
    fields: [
      location,
      { name: 'version', type: 'int', description: 'If provided during a read, the value at the version number will be returned.', in: 'query', required: false },
      body('data', 'map', 'The contents of the data map will be stored and returned on read.'),
      body('options', 'map', 'Options for writing a KV entry. Set the "cas" value to use a Check-And-Set operation: 0 writes only if the key does not exist, n only if the current version is n.'),
    ],
    description:
      'This path takes a key name and based on the operation stores, retrieves or deletes versions of data. ' +
      'A write takes a data object to store and an options object; a read returns the data and the metadata of the version read.',
  },
  {
    pattern: 'metadata/*path',
    synopsis: 'Allows interaction with key metadata and settings in the KV store.',
    operations: {
      read: "Read a key's metadata and the state of its versions.",
      list: 'List the keys under a path.',
      update: "Write a key's settings.",
      patch: "Patch a key's settings.",
      delete: 'Permanently delete a key and all its versions.',
    },
    fields: [
      location,
      body('max_versions', 'int', 'The number of versions to keep for this key; 0 uses the engine setting.'),
      body('cas_required', 'bool', CAS_REQUIRED),
      body('delete_version_after', 'duration (sec)', DELETE_AFTER),
      body('custom_metadata', 'map', 'User-provided key-value pairs that are used to describe arbitrary and version-agnostic information about a secret.'),
    ],
    description: 'This endpoint allows for reading key metadata in the key-value store, writing key settings, or permanently deleting a key and all its versions.',
  },
  {
    pattern: 'delete/*path',
    synopsis: 'Marks one or more versions as deleted in the KV store.',
    operations: { update: 'Delete the given versions of a secret; they can be undeleted.' },
    fields: [location, versions('The versions to be archived. The versioned data will not be deleted, but it will no longer be returned in normal get requests.')],
    description:
      'Deletes the data for the provided version and path in the key-value store. The versioned data will not be ' +
      'fully removed, but marked as deleted and will no longer be returned in normal get requests. This operation can be undone.',
  },
  {
    pattern: 'undelete/*path',
    synopsis: 'Undeletes one or more versions from the KV store.',
    operations: { update: 'Restore the given deleted versions of a secret.' },
    fields: [location, versions('The versions to unarchive. The versions will be restored and their data will be returned on normal get requests.')],
    description: 'Undeletes the data for the provided version and path in the key-value store. This restores the data, allowing it to be returned on get requests.',
  },
  {
    pattern: 'destroy/*path',
    synopsis: 'Permanently removes one or more versions in the KV store.',
    operations: { update: 'Permanently remove the data of the given versions of a secret.' },
    fields: [location, versions('The versions to destroy. Their data will be permanently deleted.')],
    description: 'Permanently removes the specified version data for the provided key and version numbers from the key-value store.',
  },
];

const V1: PathHelp = {
  pattern: '*path',
  synopsis: 'Pass-through secret storage to the storage backend, allowing you to read/write arbitrary data into secret storage.',
  operations: {
    read: 'Read the secret at this path.',
    list: 'List the keys under this path.',
    update: 'Write a secret at this path: the JSON body is stored as it is.',
    delete: 'Delete the secret at this path.',
  },
  fields: [location],
  description:
    'The pass-through backend reads and writes arbitrary data into secret storage, encrypting it along the way. ' +
    'A write takes any JSON object; a read returns what was written.',
};

/** The mount's own help (Vault's root help, and its invalid-path help): what the engine is and its paths. */
function overview(): PathHelp {
  const paths = V2.map((p) => `    ${p.pattern}\n        ${p.synopsis}`).join('\n\n');
  return {
    pattern: '',
    synopsis: 'The versioned key-value store (KV version 2).',
    operations: {},
    fields: [],
    description: `${V2_OVERVIEW}\n\n## PATHS\n\nThe following paths are supported by this engine. To view help for any of them, use the help command with a path matching its pattern.\n\n${paths}`,
  };
}

/** `*path` takes the rest, possibly empty (`metadata/`, which arrives without its slash). */
function matches(pattern: string, path: string): boolean {
  if (!pattern.endsWith('/*path')) return pattern === path;
  const prefix = pattern.slice(0, -'*path'.length);
  return path.startsWith(prefix) || path === prefix.slice(0, -1);
}

export function kvHelp(version: 1 | 2, path: string): PathHelp {
  if (version === 1) return V1;
  return V2.find((p) => matches(p.pattern, path)) ?? overview();
}
