//! `#[amdgpu_kernel]`: turns a Rust function into an exported AMDGPU kernel and records its
//! launch bound for the kernel builder.
//!
//! ```ignore
//! #[amdgpu_kernel(workgroup_size = 256)]
//! pub fn add_one(args: AddArgs) { /* device code */ }
//! ```
//!
//! expands to
//!
//! * on `target_arch = "amdgpu"`: `#[unsafe(no_mangle)] pub extern "gpu-kernel" fn add_one(args:
//!   AddArgs)` plus a `#[used]` byte string `__AMDGPU_KERNEL_ATTRS__add_one` =
//!   `"add_one;workgroup_size=256;waves_per_eu=0;agprs=1\0"` that the builder (`amdgpu-builder`) reads from
//!   the LLVM IR, turns into `"amdgpu-flat-work-group-size"="256,256"` (and
//!   `"amdgpu-waves-per-eu"` when given) on that kernel, and deletes;
//! * on every target: `pub const ADD_ONE: fp8gemm_device::KernelSpec<AddArgs>` naming the symbol,
//!   the bound and (through the type parameter) the argument struct, so host code launches the
//!   kernel with the right argument type and never spells its name or bound twice.
//!
//! The kernel takes exactly one argument, a `#[repr(C)]` struct shared with the host (or none).
//! The builder rewrites it into a by-value kernarg (`byref` in the constant address space), so
//! its bytes are the kernarg segment: no hand-counted offsets anywhere.
#![warn(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::{Expr, ExprLit, FnArg, Ident, ItemFn, Lit, MetaNameValue, Token, Type, parse::Parser, parse_macro_input, punctuated::Punctuated};

/// Prefix of the marker statics the builder looks for in the device LLVM IR.
const ATTRS_PREFIX: &str = "__AMDGPU_KERNEL_ATTRS__";

/// Marks a device function as an AMDGPU kernel. Arguments: `workgroup_size = N` (required, the
/// exact number of work-items per workgroup the kernel is compiled for, 1..=1024) and optionally
/// `waves_per_eu = W` (minimum waves per SIMD the register allocator must allow, 1..=8) and
/// `agprs = false` (keep the register allocator off the AccVGPRs; by default they are allowed).
#[proc_macro_attribute]
pub fn amdgpu_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func = parse_macro_input!(item as ItemFn);
    let parser = Punctuated::<MetaNameValue, Token![,]>::parse_terminated;
    let args = match parser.parse(attr) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error().into(),
    };
    match expand(args, func) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn int_value(nv: &MetaNameValue) -> syn::Result<u32> {
    match &nv.value {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<u32>(),
        other => Err(syn::Error::new_spanned(other, "expected an integer literal")),
    }
}

fn expand(args: Punctuated<MetaNameValue, Token![,]>, func: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let mut workgroup_size = None;
    let mut waves_per_eu = 0u32;
    let mut agprs = true;
    for nv in &args {
        let key = nv.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match key.as_str() {
            "workgroup_size" => {
                let v = int_value(nv)?;
                if !(1..=1024).contains(&v) {
                    return Err(syn::Error::new_spanned(&nv.value, "workgroup_size must be in 1..=1024"));
                }
                workgroup_size = Some(v);
            }
            "waves_per_eu" => {
                let v = int_value(nv)?;
                if !(1..=8).contains(&v) {
                    return Err(syn::Error::new_spanned(&nv.value, "waves_per_eu must be in 1..=8"));
                }
                waves_per_eu = v;
            }
            "agprs" => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => agprs = b.value,
                other => return Err(syn::Error::new_spanned(other, "expected `true` or `false`")),
            },
            _ => {
                return Err(syn::Error::new_spanned(
                    &nv.path,
                    "unknown #[amdgpu_kernel] argument; expected `workgroup_size = N`, `waves_per_eu = W` or `agprs = BOOL`",
                ));
            }
        }
    }
    let Some(workgroup_size) = workgroup_size else {
        return Err(syn::Error::new(Span::call_site(), "#[amdgpu_kernel] needs a launch bound: #[amdgpu_kernel(workgroup_size = 256)]"));
    };

    let sig = &func.sig;
    if !sig.generics.params.is_empty() || sig.asyncness.is_some() || sig.variadic.is_some() {
        return Err(syn::Error::new_spanned(sig, "a kernel is a plain, non-generic, non-async fn"));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new_spanned(&sig.output, "a kernel returns nothing"));
    }
    let arg_ty: Type = match sig.inputs.len() {
        0 => syn::parse_quote!(()),
        1 => match sig.inputs.first() {
            Some(FnArg::Typed(pt)) => (*pt.ty).clone(),
            _ => return Err(syn::Error::new_spanned(&sig.inputs, "a kernel takes one argument struct")),
        },
        _ => return Err(syn::Error::new_spanned(&sig.inputs, "a kernel takes exactly one #[repr(C)] argument struct (shared with the host)")),
    };

    let name = &sig.ident;
    let name_str = name.to_string();
    let vis = &func.vis;
    let attrs = &func.attrs;
    let inputs = &sig.inputs;
    let block = &func.block;
    let unsafety = &sig.unsafety;
    let marker = Ident::new(&format!("{ATTRS_PREFIX}{name_str}"), name.span());
    let marker_text = format!("{name_str};workgroup_size={workgroup_size};waves_per_eu={waves_per_eu};agprs={}\0", u8::from(agprs));
    let marker_bytes = syn::LitByteStr::new(marker_text.as_bytes(), Span::call_site());
    let marker_len = marker_text.len();
    let spec = Ident::new(&name_str.to_uppercase(), name.span());
    let doc = format!("Launch spec of the `{name_str}` kernel: symbol, launch bound ({workgroup_size} work-items) and argument type.");

    Ok(quote! {
        #[cfg(target_arch = "amdgpu")]
        // The builder turns the indirectly passed struct into a by-value kernarg.
        #[allow(improper_gpu_kernel_arg)]
        #(#attrs)*
        #[unsafe(no_mangle)]
        #vis #unsafety extern "gpu-kernel" fn #name(#inputs) #block

        #[cfg(target_arch = "amdgpu")]
        #[used]
        #[unsafe(no_mangle)]
        #[allow(non_upper_case_globals)]
        static #marker: [u8; #marker_len] = *#marker_bytes;

        #[doc = #doc]
        #vis const #spec: ::fp8gemm_device::KernelSpec<#arg_ty> =
            ::fp8gemm_device::KernelSpec::new(#name_str, #workgroup_size, #waves_per_eu);
    })
}
