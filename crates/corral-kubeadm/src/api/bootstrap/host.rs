//! What the bootstrap data does on the host besides kubeadm: files, users, NTP, disk setup and
//! mounts (cloud-init modules), and the output format with its ignition options.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema::{self, is_default};

/// File defines the input for generating write_files in cloud-init.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct File {
    /// append specifies whether to append Content to existing file if Path exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// content is the actual content of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub content: Option<String>,
    /// contentFormat specifies how to interpret content after it is resolved (inline or from
    /// contentFrom).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_format: Option<FileContentFormat>,
    /// contentFrom is a referenced source of content to populate the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_from: Option<FileSource>,
    /// encoding specifies the encoding of the file contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Encoding>,
    /// owner specifies the ownership of the file, e.g. "root:root".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub owner: Option<String>,
    /// path specifies the full path on disk where to store the file.
    #[schemars(length(min = 1, max = 512))]
    pub path: String,
    /// permissions specifies the permissions to assign to the file, e.g. "0640".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16))]
    pub permissions: Option<String>,
}

/// contentFrom is a referenced source of content to populate the file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileSource {
    /// secret represents a secret that should populate this file.
    pub secret: SecretFileSource,
}

/// secret represents a secret that should populate this file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecretFileSource {
    /// key is the key in the secret's data map for this value.
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    /// name of the secret in the KubeadmBootstrapConfig's namespace to use.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// contentFormat specifies how to interpret content after it is resolved (inline or from
/// contentFrom).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum FileContentFormat {
    /// `Raw`.
    Raw,
    /// `Template`.
    Template,
}

/// encoding specifies the encoding of the file contents.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum Encoding {
    /// `base64`.
    #[serde(rename = "base64")]
    Base64,
    /// `gzip`.
    #[serde(rename = "gzip")]
    Gzip,
    /// `gzip+base64`.
    #[serde(rename = "gzip+base64")]
    GzipBase64,
}

/// User defines the input for a generated user in cloud-init.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// gecos specifies the gecos to use for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub gecos: Option<String>,
    /// groups specifies the additional groups for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub groups: Option<String>,
    /// homeDir specifies the home directory to use for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub home_dir: Option<String>,
    /// inactive specifies whether to mark the user as inactive
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive: Option<bool>,
    /// lockPassword specifies if password login should be disabled
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_password: Option<bool>,
    /// name specifies the user name
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// passwd specifies a hashed password for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub passwd: Option<String>,
    /// passwdFrom is a referenced source of passwd to populate the passwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passwd_from: Option<PasswdSource>,
    /// primaryGroup specifies the primary group for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub primary_group: Option<String>,
    /// shell specifies the user's shell
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub shell: Option<String>,
    /// sshAuthorizedKeys specifies a list of ssh authorized keys for the user
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 2048)), length(max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub ssh_authorized_keys: Vec<String>,
    /// sudo specifies a sudo role for the user
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub sudo: Option<String>,
}

/// passwdFrom is a referenced source of passwd to populate the passwd.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PasswdSource {
    /// secret represents a secret that should populate this password.
    pub secret: SecretFileSource,
}

/// ntp specifies NTP configuration
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Ntp {
    /// enabled specifies whether NTP should be enabled
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// servers specifies which NTP servers to use
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 512)), length(max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub servers: Vec<String>,
}

/// diskSetup specifies options for the creation of partition tables and file systems on devices.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct DiskSetup {
    /// filesystems specifies the list of file systems to setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub filesystems: Vec<Filesystem>,
    /// partitions specifies the list of the partitions to setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub partitions: Vec<Partition>,
}

/// Partition defines how to create and layout a partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of the fields in [layout diskLayout] must be set", "rule": "[has(self.layout),has(self.diskLayout)].filter(x,x==true).size() == 1"}]))]
pub struct Partition {
    /// device is the name of the device.
    #[schemars(length(min = 1, max = 256))]
    pub device: String,
    /// diskLayout specifies an ordered list of partitions, where each item defines the percentage
    /// of disk space and optional partition type for that partition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub disk_layout: Vec<PartitionSpec>,
    /// layout specifies the device layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<bool>,
    /// overwrite describes whether to skip checks and create the partition if a partition or
    /// filesystem is found on the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// tableType specifies the tupe of partition table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_type: Option<PartitionTableType>,
}

/// PartitionSpec defines the size and optional type for a partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PartitionSpec {
    /// partitionType is the partition type (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 36), extend("x-kubernetes-validations" = [{"message": "partitionType must be one of Linux, LinuxSwap, LinuxRAID, LVM, Fat32, NTFS, LinuxExtended or a full GPT partition GUID", "rule": "self.matches('^(Linux|LinuxSwap|LinuxRAID|LVM|Fat32|NTFS|LinuxExtended|[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})$')"}]))]
    pub partition_type: Option<String>,
    /// percentage of disk that partition will take (1-100)
    #[schemars(range(min = 1, max = 100))]
    pub percentage: i32,
}

/// tableType specifies the tupe of partition table.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum PartitionTableType {
    /// `mbr`.
    #[serde(rename = "mbr")]
    Mbr,
    /// `gpt`.
    #[serde(rename = "gpt")]
    Gpt,
}

/// Filesystem defines the file systems to be created.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Filesystem {
    /// device specifies the device name
    #[schemars(length(min = 1, max = 256))]
    pub device: String,
    /// extraOpts defined extra options to add to the command for creating the file system.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 256)), length(max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_opts: Vec<String>,
    /// filesystem specifies the file system type.
    #[schemars(length(min = 1, max = 128))]
    pub filesystem: String,
    /// label specifies the file system label to be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub label: Option<String>,
    /// overwrite defines whether or not to overwrite any existing filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overwrite: Option<bool>,
    /// partition specifies the partition to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub partition: Option<String>,
    /// replaceFS is a special directive, used for Microsoft Azure that instructs cloud-init to
    /// replace a file system of <FS_TYPE>.
    #[serde(default, rename = "replaceFS", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub replace_fs: Option<String>,
}

/// ignition contains Ignition specific configuration.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct IgnitionSpec {
    /// containerLinuxConfig contains CLC specific configuration.
    #[serde(default, skip_serializing_if = "is_default")]
    pub container_linux_config: ContainerLinuxConfig,
}

/// containerLinuxConfig contains CLC specific configuration.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ContainerLinuxConfig {
    /// additionalConfig contains additional configuration to be merged with the Ignition
    /// configuration generated by the bootstrapper controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32768))]
    pub additional_config: Option<String>,
    /// strict controls if AdditionalConfig should be strictly parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// format specifies the output format of the bootstrap data.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum Format {
    /// `cloud-config`.
    #[serde(rename = "cloud-config")]
    CloudConfig,
    /// `ignition`.
    #[serde(rename = "ignition")]
    Ignition,
}
