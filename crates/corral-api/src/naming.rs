//! Names made from upstream's naming templates (`spec.machineNaming.template` of MachineSets,
//! MachineDeployments and KubeadmControlPlanes; upstream `internal/topology/names/names.go`):
//! the rendering both the controllers that name Machines and the admission rules that check a
//! template use, so that what admission accepts is what the controllers can render.

/// The longest name a template may render: longer ones are cut, as upstream does.
pub const MAX_NAME_LENGTH: usize = 63;

/// How many random characters end a generated name.
pub const RANDOM_LENGTH: usize = 5;

/// Renders `template`, replacing each `{{ .field }}` (any spacing inside the braces) with its
/// value in `fields` (keys such as `.cluster.name`, `.random`); a name longer than 63
/// characters is cut to 58 and given five more characters from `random`, as upstream's
/// `templateGenerator.GenerateName`. The error says why the template does not render: a field
/// it does not know, or braces that do not close.
pub fn render_name(
    template: &str,
    fields: &[(&str, &str)],
    random: &mut dyn FnMut() -> String,
) -> Result<String, String> {
    let mut name = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        name.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or("unclosed action")?;
        let field = after[..end].trim();
        let value = fields
            .iter()
            .find(|(key, _)| *key == field)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("unknown field {field:?}"))?;
        name.push_str(value);
        rest = &after[end + 2..];
    }
    if rest.contains("}}") {
        return Err("unexpected \"}}\"".into());
    }
    name.push_str(rest);
    if name.len() > MAX_NAME_LENGTH {
        let mut cut = MAX_NAME_LENGTH - RANDOM_LENGTH;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str(&random());
    }
    Ok(name)
}
